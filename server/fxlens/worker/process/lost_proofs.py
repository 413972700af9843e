"""A fix whose rewrite or proof hung or crashed the trace child costs only that fix, never its class.

A proof runs the rewritten code (worker/fixes/proof.py): it loads the edited copy of the buffer, re-traces the class
and runs it on real CPU tensors, which no level does. Before it, fxlens's rewrite reads the objects the site's line
names (is this call `print`, a Logger's method, `warnings.warn`?), and an object's own `__eq__` or `__getattr__`
runs then. Whatever either does to the process (loops forever, deadlocks, a segmentation fault in native code,
`os._exit`), the class's levels are out already. The worker runs the request again with the fix named in
`lost_proofs`: the class is traced as before, and the fix comes back not proven, with why in words, as every failed
proof does. The classes before it (each run's order is the request's) were reported whole, levels and fixes, and
the server holds their events: the run again leaves them alone (worker/analysis/analyse.py).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any

from fxlens import messages
from fxlens.wire_format import record_to_wire
from fxlens.worker.process.postmortem import describe_death, read_dump

# proofs lost per request before fxlens proves no other fix of the file in it (each hang costs the proof's limit)
MAX_LOST_PROOFS = 2


def why_lost(job: Any, reason: str | None, status: int, grown_kb: int) -> tuple[str, messages.LostProof | None]:
    """(the fix whose rewrite or proof the child was running, why that fix is not proven) for a child that died or
    was stopped without a report; ("", None) when it was on no fix. `reason`: why the worker stopped it (None: it
    died)."""
    fix_id, deadline, seconds, step = job.location.proof() if job.location is not None else ("", 0.0, 0.0, "")
    if not fix_id:
        return "", None
    rewriting = step == "rewrite"
    what = "fxlens's rewrite of this line" if rewriting else "the proof of this fix"
    dumped, note = read_dump(job.dump_fd, os.path.abspath(job.request.path), job.request.text)
    class_name, sampled, _, limits_note, _ = job.location.read()
    if job.aborted is not None:  # (an error raised past the proof and the whole analysis)
        why = f"not proven: {what} raised past fxlens: {job.aborted.get('message', '')}"
    elif reason is not None and time.monotonic() >= deadline:
        why = f"not proven: {what} did not finish within {seconds:.3g} s"
        if rewriting:
            why += (
                ", so fxlens stopped it: an object the line calls ran code of its own (its `__eq__` or `__getattr__`) "
                "that may loop forever or wait on a lock"
            )
        else:
            why += " (the code it runs may loop forever or wait on a lock), so fxlens stopped it"
    elif reason is not None:
        why = (
            f"not proven: {what} was still running when the trace's time limit "
            f"({job.request.timeout:g} s, fxlens.timeoutSeconds) came"
        )
    else:
        where = "while it proved this fix"
        if rewriting:
            where = "while fxlens wrote this fix (reading an object the line calls)"
        memory_mb = int(job.request.memory_mb or 0)
        why = "not proven: " + describe_death(status, grown_kb, memory_mb, where, note, limits_note)[1]
    # a proof runs the fixed text under the file's path; a rewrite runs no line of the file (the line last
    # sampled is a level's, so none is said)
    return fix_id, messages.LostProof(why, 0 if rewriting else dumped or sampled, step, class_name)


def without_the_lost_proof(
    request: messages.TraceRequest, fix_id: str, lost: messages.LostProof
) -> messages.TraceRequest:
    """The request to run again: the fix reported not proven, and once MAX_LOST_PROOFS are lost, no proof run (nor,
    when a rewrite was among them, any rewrite: each loss costs a trace again)."""
    proofs = {**request.lost_proofs, fix_id: record_to_wire(lost)}
    if len(proofs) >= MAX_LOST_PROOFS:
        rewrites = any(r.step == "rewrite" for r in messages.read_lost_proofs(proofs).values())
        doing, ended = ("writes", f"{len(proofs)} fixes") if rewrites else ("proves", f"{len(proofs)} proofs")
        why = f"not proven: fxlens {doing} no other fix of this file in this trace, {ended} having ended it"
        proofs[""] = record_to_wire(messages.LostProof(why, step="rewrite" if rewrites else "proof"))
    return replace(request, lost_proofs=proofs)
