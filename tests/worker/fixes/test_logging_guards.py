"""`print`, logging and warnings in forward, however the file reaches them (a module logger, `self.logger`, a
class's logger, `getLogger(...)` inline, an adapter, a bound `logger.debug`, the root logger, `warn` imported
under its own name): each is guarded by `torch.compiler.is_compiling()` (and fx's `is_fx_tracing()` where fx
fails too), proven, and then checked in torch itself: the fixed class compiles with fullgraph=True, returns the
original's outputs, and still logs or warns in eager mode. Dynamo's breaks inside the logging frames the call
runs eagerly are said at the call, where torch counts them, not at the class's line."""

from __future__ import annotations

import ast
import logging
import warnings
from pathlib import Path

import pytest
import torch
import torch._dynamo
from fix_support import load_text, only_class, only_fix, report_with_fixes
from fxlens.fix_report import apply_edits
from fxlens.report import FileReport

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fixes"
LOGGERS = FIXTURES / "loggers.py"
ROUTING = FIXTURES / "routing.py"
# each class, and what it says in eager mode: a log record's logger name, or a warning's category
SAYS = {
    "SelfLoggerScale": "encoder.scale",
    "ClassLoggerNorm": "encoder.norm",
    "InlineLoggerGate": "loggers_original",
    "AdapterProjection": "loggers_original",
    "BoundDebugMix": "loggers_original",
    "RootLoggerResidual": "root",
    "WarnsOnWideInput": DeprecationWarning,
    "ModuleWarningsDrop": UserWarning,
}


FX_FAILS = {"SelfLoggerScale", "WarnsOnWideInput"}  # their messages iterate a traced shape


@pytest.fixture(scope="module")
def report() -> FileReport:
    return report_with_fixes(LOGGERS, ("fx", "dynamo"))


def _class_line(text: str, name: str) -> int:
    return next(n.lineno for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == name)


def _breaks_in_torch(module: torch.nn.Module, x: torch.Tensor) -> int:
    """Every graph break torch.compile records for one call (the frames a break runs eagerly included)."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch.compile(module, backend="eager")(x)
    return sum(torch._dynamo.utils.counters["graph_break"].values())


def _said(module: torch.nn.Module, x: torch.Tensor, caplog: pytest.LogCaptureFixture) -> list:
    """What one eager call logs (its loggers' names) and warns (the categories)."""
    caplog.clear()
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module(x)
    return [r.name for r in caplog.records] + [w.category for w in caught]


def test_every_way_of_reaching_a_logger_or_warnings_gets_the_proven_guard(report):
    text = LOGGERS.read_text()
    for name in SAYS:
        fix = only_fix(report, name)
        assert fix.proven and fix.rule == "skip-while-compiling", (name, fix.why_not())
        [edit] = fix.edits
        assert (not report.find_class(name).levels["fx"].ok) == (name in FX_FAILS)
        fx_too = " and not torch.fx._symbolic_trace.is_fx_tracing()" if name in FX_FAILS else ""
        assert edit.new_text.startswith(f"if not torch.compiler.is_compiling(){fx_too}:\n")
        assert edit.new_text.endswith(edit.old_text) and edit.old_text in text
        assert fix.proof.levels[-1].what == "graph breaks" and fix.proof.levels[-1].after == 0


def test_the_fixed_classes_compile_whole_and_still_say_it_in_eager_mode(report, caplog):
    text = LOGGERS.read_text()
    fixed_text = apply_edits(text, [e for name in SAYS for e in only_fix(report, name).edits])
    original, fixed = load_text("loggers_original", text), load_text("loggers_fixed", fixed_text)
    for name, says in SAYS.items():
        before = getattr(original, name)()
        after = getattr(fixed, name)()
        after.load_state_dict(before.state_dict())
        x = torch.randn(3, 16, generator=torch.Generator().manual_seed(7))
        assert _breaks_in_torch(before, x) > 0
        assert _breaks_in_torch(after, x) == 0
        torch._dynamo.reset()
        assert torch.equal(torch.compile(after, backend="eager", fullgraph=True)(x), before(x))
        torch.fx.symbolic_trace(after)  # fx too, where the message read the traced shape
        if name in FX_FAILS:
            with pytest.raises(torch.fx.proxy.TraceError):
                torch.fx.symbolic_trace(before)
        said = _said(after, x, caplog)
        renamed = "loggers_fixed" if says == "loggers_original" else says
        assert said == [renamed] and _said(before, x, caplog) == [says], name


def test_the_breaks_inside_the_logging_frames_are_said_at_the_call_as_torch_counts_them():
    text = only_class(ROUTING.read_text(), "LoggedRouter")
    cls = report_with_fixes(ROUTING, ("dynamo",), text).find_class("LoggedRouter")
    result = cls.levels["dynamo"]
    call = next(i for i, line in enumerate(text.splitlines(), 1) if "logger.debug(" in line)
    assert _class_line(text, "LoggedRouter") not in {d.line for d in result.diagnostics}
    [logged] = [d for d in result.diagnostics if d.line == call]
    assert "breaks inside it too (1 more): in `debug` (logging/__init__.py:" in logged.explanation
    module = load_text("routing_raw", text).LoggedRouter()
    assert result.breaks == _breaks_in_torch(module, torch.randn(3, 32))
    fix = next(f for f in cls.fixes if f.line == call)
    assert fix.proven and fix.rule == "skip-while-compiling", fix.why_not()
