"""The scheduler against a fake worker: debounce, newest text wins, cancellation, cursor class first."""

import asyncio
import json
from pathlib import Path

from fxlens.engine.documents import Document, Documents, Traced, WorkspaceContext
from fxlens.engine.scheduler import MAX_COST_RETRIES, Scheduler
from fxlens.engine.worker_client import TraceOptions
from fxlens.report import Cost, FileReport, file_from_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lsp"
TEXT = (FIXTURES / "residual_mlp.py").read_text()


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.cancelled = 0
        self.release = asyncio.Event()

    def submit(self, path, text, options, ask=None, listeners=None):
        self.calls.append(
            {"text": text, "first": ask.first, "known": ask.known, "roots": ask.roots, "buffers": ask.buffers}
        )
        return self._answer(listeners.on_class)

    async def _answer(self, on_class):
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        report = file_from_json(json.loads((FIXTURES / "residual_mlp.report.json").read_text()))
        for cls in report.classes:
            on_class(cls)
        return report


class FakeSupervisor:
    def __init__(self, client) -> None:
        self.client = client

    async def get(self):
        return self.client


class Hooks:
    def __init__(self) -> None:
        self.events: list[str] = []

    def started(self, doc):
        self.events.append("started")

    def class_done(self, doc, report, levels):
        self.events.append(f"class {report.name}")

    def stage_done(self, doc, levels):
        self.events.append(f"stage {', '.join(levels)}")

    def costs_done(self, doc, names):
        self.events.append(f"costs {', '.join(names)}")

    def ended(self, doc):
        self.events.append("ended")

    def finished(self, doc):
        self.events.append("finished")

    def unavailable(self, doc, error):
        self.events.append("unavailable")

    def busy(self, active):
        self.events.append(f"busy {active}")


def make(options: TraceOptions | None = None):
    if options is None:
        options = TraceOptions()
    client, hooks = FakeClient(), Hooks()
    return client, hooks, Scheduler(FakeSupervisor(client), hooks, lambda: options, debounce=0.01)


async def test_a_burst_of_edits_traces_only_the_last_text():
    client, hooks, scheduler = make()
    doc = Document("file:///r.py", "/r.py", 1, TEXT)
    for version in range(2, 12):
        doc.edit(version, TEXT + f"\n# edit {version}\n")
        scheduler.schedule(doc)
    client.release.set()
    await scheduler.settled(doc)
    assert [c["text"] for c in client.calls] == [TEXT + "\n# edit 11\n"]
    assert doc.history == [11] and hooks.events[-1] == "finished"


async def test_a_newer_edit_cancels_the_trace_in_flight():
    client, _hooks, scheduler = make()
    doc = Document("file:///r.py", "/r.py", 1, TEXT)
    first = scheduler.schedule(doc, delay=0.0)
    while not client.calls:
        await asyncio.sleep(0)
    doc.edit(2, TEXT + "\n")
    scheduler.schedule(doc)
    await asyncio.gather(first, return_exceptions=True)
    assert first.cancelled() and client.cancelled == 1
    client.release.set()
    await scheduler.settled(doc)
    assert doc.history == [2] and scheduler.active == 0


async def test_the_class_under_the_cursor_goes_first_and_streams_in():
    client, hooks, scheduler = make()
    doc = Document("file:///r.py", "/r.py", 1, TEXT)
    report = file_from_json(json.loads((FIXTURES / "residual_mlp.report.json").read_text()))
    doc.finish(Traced(1, TEXT, report))
    doc.cursor_line = 27
    doc.edit(2, TEXT.replace("torch.randn(4, 8)", "torch.randn(5, 8)"))
    client.release.set()
    await scheduler.trace_now(doc, full=True)
    assert client.calls[0]["first"] == "ResidualMLP" and client.calls[0]["known"] == {}
    assert hooks.events[:3] == ["busy 1", "started", "class Residual"]


async def test_execution_off_runs_nothing():
    client, _hooks, scheduler = make(TraceOptions(execution="off"))
    doc = Document("file:///r.py", "/r.py", 1, TEXT)
    await scheduler.trace_now(doc)
    assert client.calls == [] and doc.last is None


async def test_an_edit_offers_the_last_traces_fingerprints_and_a_forced_retrace_does_not():
    client, _hooks, scheduler = make()
    doc = Document("file:///r.py", "/r.py", 1, TEXT)
    report = file_from_json(json.loads((FIXTURES / "residual_mlp.report.json").read_text()))
    for cls, fingerprint in zip(report.classes, ("f-residual", "f-mlp")):
        cls.fingerprint = fingerprint
    doc.finish(Traced(1, TEXT, report, TraceOptions()))
    client.release.set()
    doc.edit(2, TEXT.replace("self.head(h).sum()", "self.head(h).mean()"))
    await scheduler.trace_now(doc, full=False)
    await scheduler.trace_now(doc, full=True)
    assert [c["known"] for c in client.calls] == [{"Residual": "f-residual", "ResidualMLP": "f-mlp"}, {}]


async def test_the_request_carries_the_roots_and_the_other_open_buffers():
    client = FakeClient()
    around = WorkspaceContext(("/repo",), (("/repo/pkg/parts.py", "X = 1\n"),))
    scheduler = Scheduler(
        FakeSupervisor(client), Hooks(), lambda: TraceOptions(), debounce=0.01, workspace_context=lambda doc: around
    )
    doc = Document("file:///repo/pkg/model.py", "/repo/pkg/model.py", 1, TEXT)
    client.release.set()
    await scheduler.trace_now(doc, full=False)
    assert client.calls[0]["roots"] == ["/repo"] and client.calls[0]["buffers"] == {"/repo/pkg/parts.py": "X = 1\n"}
    assert doc.last.workspace_context == around.key


async def test_an_edit_of_another_buffer_sends_an_unchanged_text_to_the_worker_again():
    client = FakeClient()
    parts = ["X = 1\n"]
    scheduler = Scheduler(
        FakeSupervisor(client),
        Hooks(),
        lambda: TraceOptions(),
        debounce=0.01,
        workspace_context=lambda doc: WorkspaceContext(("/repo",), (("/repo/parts.py", parts[0]),)),
    )
    doc = Document("file:///repo/model.py", "/repo/model.py", 1, TEXT)
    client.release.set()
    await scheduler.trace_now(doc, full=False)
    await scheduler.trace_now(doc, full=False)  # nothing changed: the last result stands
    parts[0] = "X = 2\n"
    await scheduler.trace_now(doc, full=False)
    assert [c["buffers"] for c in client.calls] == [{"/repo/parts.py": "X = 1\n"}, {"/repo/parts.py": "X = 2\n"}]


def test_neighbours_are_the_other_python_buffers_of_the_same_workspace_folder():
    docs = Documents()
    model = docs.open("file:///repo/pkg/model.py", "/repo/pkg/model.py", 1, "")
    parts = docs.open("file:///repo/pkg/parts.py", "/repo/pkg/parts.py", 1, "")
    docs.open("file:///repo/README.md", "/repo/README.md", 1, "")
    elsewhere = docs.open("file:///other/net.py", "/other/net.py", 1, "")
    assert docs.neighbours(parts, ["/repo", "/more"]) == [model]
    assert docs.neighbours(elsewhere, ["/repo"]) == []
    assert set(map(id, docs.neighbours(elsewhere, []))) == {id(model), id(parts)}  # no folders: every buffer
    assert dict(docs.workspace_context(model, ["/repo"]).buffers) == {"/repo/pkg/parts.py": "", "/other/net.py": ""}


def test_a_half_typed_buffer_is_imported_as_its_last_text_that_parsed():
    docs = Documents()
    model = docs.open("file:///repo/model.py", "/repo/model.py", 1, "from parts import f\n")
    parts = docs.open("file:///repo/parts.py", "/repo/parts.py", 1, "def f(x):\n    return x\n")
    parts.finish(Traced(1, parts.text, FileReport("/repo/parts.py")))
    parts.edit(2, "def f(x):\n    return (x\n")
    assert dict(docs.workspace_context(model, []).buffers) == {"/repo/parts.py": "def f(x):\n    return x\n"}
    parts.edit(3, "def f(x):\n    return -x\n")
    assert dict(docs.workspace_context(model, []).buffers) == {"/repo/parts.py": "def f(x):\n    return -x\n"}
    fresh = docs.open("file:///repo/new.py", "/repo/new.py", 1, "def g(:\n")
    assert "/repo/new.py" not in dict(docs.workspace_context(model, []).buffers)  # never parsed: the disk's
    assert fresh.importable_text() is None


class CutShortClient:
    """A worker whose costs after each report are cut short (a trace of another file needed the place): only
    the classes in `counted`, one list per request, get theirs before the costs end."""

    def __init__(self, counted: list[list[str]]) -> None:
        self.counted = counted
        self.calls: list[dict] = []
        self.ends_heard = 0  # the ends of costs the scheduler has heard and acted on
        self.heard = asyncio.Event()

    def submit(self, path, text, options, ask=None, listeners=None):
        self.calls.append({"known": ask.known, "without_cost": ask.without_cost})
        return self._answer(listeners, self.counted[len(self.calls) - 1])

    async def _answer(self, listeners, counted):
        report = file_from_json(json.loads((FIXTURES / "residual_mlp.report.json").read_text()))
        for cls in report.classes:
            cls.fingerprint = f"f-{cls.name}"
        if self.calls[-1]["known"]:
            report.unchanged, report.classes = [c.name for c in report.classes], []
        for cls in report.classes:
            listeners.on_class(cls)
        loop = asyncio.get_running_loop()
        for name in counted:  # (as the worker's events come: after the report)
            loop.call_soon(listeners.on_cost, name, f"f-{name}", Cost(parameters=len(name)))
        loop.call_soon(self._end, listeners)
        return report

    def _end(self, listeners) -> None:
        listeners.on_costs_end()
        asyncio.get_running_loop().call_soon(self._heard)  # after what the scheduler queued on hearing it

    def _heard(self) -> None:
        self.ends_heard += 1
        self.heard.set()


async def _costs_settled(scheduler, client, doc) -> None:
    """Until no trace is pending and the end of the last one's costs has been acted on without starting another."""
    while True:
        await scheduler.settled(doc)
        while client.ends_heard < len(client.calls):
            client.heard.clear()
            await client.heard.wait()
        if doc.task.done():
            return


async def test_costs_cut_short_are_counted_again_for_the_same_text_untraced():
    client = CutShortClient([["Residual"], ["ResidualMLP"]])
    hooks = Hooks()
    scheduler = Scheduler(FakeSupervisor(client), hooks, lambda: TraceOptions(), debounce=0.01)
    doc = Document("file:///r.py", "/r.py", 1, TEXT)
    await scheduler.trace_now(doc, full=False)
    await _costs_settled(scheduler, client, doc)
    assert client.calls[1] == {
        "known": {"Residual": "f-Residual", "ResidualMLP": "f-ResidualMLP"},
        "without_cost": ["ResidualMLP"],
    }
    assert {c.name: c.cost.parameters for c in doc.good.report.classes} == {"Residual": 8, "ResidualMLP": 11}
    assert len(client.calls) == 2 and "costs ResidualMLP" in hooks.events


async def test_a_cost_lost_every_time_is_asked_for_only_so_often():
    client = CutShortClient([[], [], [], []])
    scheduler = Scheduler(FakeSupervisor(client), Hooks(), lambda: TraceOptions(), debounce=0.01)
    doc = Document("file:///r.py", "/r.py", 1, TEXT)
    await scheduler.trace_now(doc, full=False)
    await _costs_settled(scheduler, client, doc)
    assert len(client.calls) == 1 + MAX_COST_RETRIES
    assert all(c.cost is None for c in doc.good.report.classes)
