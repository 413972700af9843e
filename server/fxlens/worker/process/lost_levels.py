"""A compile level that hung or crashed the trace child costs only that level of its class, never its other levels.

torch.compile runs code no other level does: `torch.compiler.is_compiling() and not is_exporting()` is true only
there, a `@torch.compiler.disable`d helper runs eagerly from compiled code, inductor compiles and runs kernels. Code
that deadlocks or crashes only there (a native helper with a bug, a lock taken twice) takes the trace process down
at the dynamo or inductor level, after the class's cheaper levels are out. The worker runs the request again with
the level named in `lost_levels`: the class is traced as before without it (and without the levels that compile
through it), and that level says it was lost and why.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fxlens import messages
from fxlens.level_info import LEVELS_LOST_WITH
from fxlens.report import Diagnostic, to_json

# classes per request whose compile level may be lost before a further loss costs its class as a whole (each loss
# runs the request again, a hang after the trace's whole time limit)
MAX_LOST_LEVELS = 2


def without_the_lost_level(job: Any, diagnostic: Diagnostic, working_on: str) -> messages.TraceRequest | None:
    """The request to run again without the compile level class `working_on` was tracing when its child hung or
    crashed (`diagnostic`: what happened, as the whole class would have been told); None when no compile level
    was running (the class, or the file, is lost as before)."""
    request: messages.TraceRequest = job.request
    level = job.location.level() if job.location is not None else ""
    if job.aborted is not None or not working_on or level not in LEVELS_LOST_WITH:
        return None
    if working_on in request.lost_levels or len(request.lost_levels) >= MAX_LOST_LEVELS:
        return None
    lost_with = [other for other in LEVELS_LOST_WITH[level] if other != level and other in request.levels]
    also = f" (and {', '.join(lost_with)}, which compiles through it)" if lost_with else ""
    diagnostic.message = (
        f"fxlens lost the {level} level{also}: {diagnostic.message}; the class's other levels were traced without it"
    )
    diagnostic.level, diagnostic.class_name = level, working_on
    return replace(request, lost_levels={**request.lost_levels, working_on: to_json(diagnostic)})
