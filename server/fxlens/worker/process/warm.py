"""The warm worker: imports torch once, then runs each analysis in a forked, killable child.

Messages are JSON lines: requests on stdin, events on the original stdout (which user code can no
longer reach: fd 1 is pointed at stderr before anything else runs).
"""

from __future__ import annotations

import os
import selectors
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fxlens import messages
from fxlens.messages import with_job_id
from fxlens.report import Diagnostic, FileReport, to_json
from fxlens.worker.failures.limits import MAX_EVENT_BYTES as CHANNEL_LIMIT
from fxlens.worker.process import isolation, lost_levels, lost_proofs, postmortem, shield
from fxlens.worker.process.jobs import DEFAULT_TIMEOUT, MAX_RECIPE_BYTES, Job, normalise, worth_warming_up
from fxlens.worker.process.texts import Stdin, TextStore, UnknownText

MAX_CHILDREN = messages.TRACES_AT_ONCE
# a child's events arrive as lines (the child keeps each under the channel's limit); one without a
# newline much longer is not fxlens talking
MAX_EVENT_BYTES = 2 * CHANNEL_LIMIT
# a class whose hang or crash ended a trace is left out and the file traced again without it, this
# many times per request at most (each hang costs a whole timeout)
MAX_CLASS_RETRIES = 2
# how often a child that closed its channel (closing descriptors it did not open) is looked at
DEAF_POLL_SECONDS = 0.1
# how often the worker looks whether the server that started it is still its parent
PARENT_POLL_SECONDS = 1.0


# what the worker does with a trace child's event (job, event, its line): True when the job is finished;
# the event is Any: each handler takes the type it is registered under, which no mapping type can say
ChildHandler = Callable[[Job, Any, bytes], bool]


class Worker:
    def __init__(
        self,
        send: Callable[[messages.Event], None],
        write: Callable[[str], None],
        channel_fd: int = -1,
        mask: set | None = None,
    ) -> None:
        self.send = send  # an event to the server
        self.write = write  # a line to the server, already JSON
        self.channel_fd = channel_fd
        self.mask = mask  # the signal mask a trace child restores (the worker blocks what could end it)
        self.selector = selectors.DefaultSelector()
        self.queue: list[Job] = []
        self.running: dict[int, Job] = {}
        self.stdin = Stdin(TextStore())  # requests, and the texts they name by key
        self.stopping = False
        self.standby: isolation.Standby | None = None
        # the graphs the next standby exports while it waits: the last finished trace's
        self.recipes: list[dict] = []
        self.on_request: dict[type, Callable] = {
            messages.TraceRequest: self._queue,
            messages.Cancel: lambda request: self.cancel(request.id),
            messages.Shutdown: self._shut_down,
            messages.Ping: lambda ping: self.send(messages.Pong(id=ping.id)),
        }
        self.on_child_event: dict[type, ChildHandler] = {
            messages.Aborted: self._child_aborted,
            messages.Started: self._child_started,
            messages.WarmUpRecipe: self._child_warm_up_recipe,
            messages.ClassCost: self._child_cost,
            messages.End: self._child_end,
            messages.Done: self._child_done,
            messages.ClassTraced: self._relay,
            messages.Stage: self._relay,
            messages.PassDone: self._relay,
        }

    # -- requests --------------------------------------------------------------------------------

    def handle(self, request: messages.Request) -> None:
        self.on_request[type(request)](request)

    def _queue(self, request: messages.TraceRequest) -> None:
        if request.id is None:
            raise ValueError("a trace request needs its `id`")
        try:
            resolved = self.stdin.store.resolve(request)
        except UnknownText as error:  # (restarted, or dropped as older): the server sends the texts again
            self.send(messages.UnknownText(id=request.id, keys=error.keys))
            return
        self.queue.append(Job(request.id, normalise(resolved)))

    def _shut_down(self, request: messages.Shutdown) -> None:
        self.stopping = True

    def cancel(self, job_id: int) -> None:
        self.queue = [j for j in self.queue if j.id != job_id]
        job = self.running.get(job_id)
        if job is not None:
            self._finish(job, kill=True)
        self.send(messages.Cancelled(id=job_id))

    # -- children --------------------------------------------------------------------------------

    def _private_fds(self) -> list[int]:
        """The worker's descriptors a new child must close: the channel, the other traces' pipes and dumps."""
        return [self.channel_fd, *(fd for j in self.running.values() for fd in (j.read_fd, j.dump_fd))]

    def _prepare_standby(self) -> OSError | None:
        """Fork the next standby unless there is one; the error if the fork failed (the next try is at the
        next trace: out of processes or memory is not forever)."""
        if self.standby is None and not self.stopping:
            try:
                self.standby = isolation.fork_standby(self._private_fds(), self.recipes, self.mask)
            except OSError as error:
                return error
        return None

    def _start(self, job: Job) -> None:
        error: OSError | None = None
        for _ in range(2):  # a standby that died while waiting is replaced once
            error = self._prepare_standby() or error
            standby, self.standby = self.standby, None
            if standby is None:
                break
            try:
                isolation.hand_over(standby, job.request)
            except OSError as lost:
                error = lost
                isolation.discard(standby)
                self.recipes = []  # it may have died warming up on them: the next standby goes without
                continue
            job.pid, job.read_fd, job.dump_fd, job.rss_at_fork_kb, job.location = (
                standby.pid,
                standby.events_fd,
                standby.dump_fd,
                standby.rss_at_fork_kb,
                standby.location,
            )
            os.set_blocking(job.read_fd, False)
            job.deadline = time.monotonic() + (job.request.timeout or DEFAULT_TIMEOUT)
            self.running[job.id] = job
            self.selector.register(job.read_fd, selectors.EVENT_READ, job)
            return
        # out of processes or memory: the request still gets an answer
        self._answer_unstarted(job, f"fxlens could not start a trace process: {error or 'fork failed'}")

    def _answer_unstarted(self, job: Job, message: str) -> None:
        diagnostic = Diagnostic(
            1,
            0,
            1,
            0,
            "error",
            "crash",
            message,
            fix="Close other programs or lower the number of open files, then retrace.",
        )
        report = FileReport(os.path.abspath(job.request.path), python=sys.version.split()[0], diagnostics=[diagnostic])
        self.send(messages.Done(report=to_json(report), id=job.id))

    def _read_child(self, job: Job) -> None:
        try:
            chunk = os.read(job.read_fd, 1 << 20)
        except BlockingIOError:
            if job.deaf:  # a writer again, with nothing written yet
                job.deaf = False
                self.selector.register(job.read_fd, selectors.EVENT_READ, job)
            return
        if not chunk:
            if job.deaf:
                return
            if isolation.running(job.pid):
                # it closed descriptors it did not open, fxlens's channel among them: it may open the
                # channel again (child.Channel does), and its death or the deadline still ends it
                job.deaf = True
                self.selector.unregister(job.read_fd)
                return
            self._finish(job, kill=False)
            return
        if job.deaf:
            job.deaf = False
            self.selector.register(job.read_fd, selectors.EVENT_READ, job)
        if b"\n" not in chunk:  # a large event arrives 64 KB at a time: join once, at its end
            job.pieces.append(chunk)
            if sum(map(len, job.pieces)) > MAX_EVENT_BYTES:
                self._finish(job, kill=True, reason="it wrote garbage to fxlens's channel")
            return
        *lines, rest = b"".join([*job.pieces, chunk]).split(b"\n")
        job.pieces = [rest]
        for line in lines:
            event = messages.child_event(line)
            if event is None:
                continue  # user code wrote to our pipe; only well-formed events count
            if self.on_child_event[type(event)](job, event, line):
                return

    # -- a trace child's events: True when its job is finished -----------------------------------------

    def _child_aborted(self, job: Job, event: messages.Aborted, line: bytes) -> bool:
        job.aborted = event.diagnostic
        return False

    def _child_started(self, job: Job, event: messages.Started, line: bytes) -> bool:
        job.started = True
        return False

    def _child_warm_up_recipe(self, job: Job, event: messages.WarmUpRecipe, line: bytes) -> bool:
        if len(line) <= MAX_RECIPE_BYTES:
            job.recipes = worth_warming_up([*job.recipes, event.recipe])
        return False

    def _relay(self, job: Job, event: messages.Event, line: bytes) -> bool:
        if not job.tail:  # after its report only its costs count, until `end`
            self.write(with_job_id(job.id, line))
        return False

    def _child_cost(self, job: Job, event: messages.ClassCost, line: bytes) -> bool:
        self.write(with_job_id(job.id, line))
        return False

    def _child_end(self, job: Job, event: messages.End, line: bytes) -> bool:
        if not job.tail:
            return False  # (user code writing to the channel: only a report with costs is followed by one)
        self._finish(job, kill=True)
        return True

    def _child_done(self, job: Job, event: messages.Done, line: bytes) -> bool:
        if job.tail:
            self._finish(job, kill=True)
            return True
        job.done = True
        self.recipes = job.recipes or self.recipes
        if event.costs:
            # the report goes out now; the child counts the costs after it (child.py), then says `end`. They get
            # a time limit of their own from here: a trace that took most of its limit (a loaded machine, the
            # costs at a lower priority) would otherwise lose them to the trace's deadline, and the lens its cost
            job.tail = True
            job.deadline = time.monotonic() + (job.request.timeout or DEFAULT_TIMEOUT)
            self.write(with_job_id(job.id, line))
            return False
        # nothing the child does after its report matters: stop it and whatever it started, answer, then
        # reap (the kernel takes milliseconds to tear a large process down)
        isolation.kill_group(job.pid)
        self.write(with_job_id(job.id, line))
        self._finish(job, kill=True)
        return True

    def _finish(self, job: Job, kill: bool, reason: str | None = None) -> None:
        """Reap the child (and anything it spawned); if it died without a report, make one (or, when it
        died before it read the request, give the request to another child once)."""
        if kill and reason is not None:
            isolation.request_stack_dump(job.pid, job.dump_fd)
        dump_fd_gone = isolation.running(job.pid) and not os.path.exists(f"/proc/{job.pid}/fd/{job.dump_fd}")
        isolation.kill_group(job.pid)
        reaped = isolation.reap(job.pid)
        if not job.deaf:
            self.selector.unregister(job.read_fd)
        os.close(job.read_fd)
        self.running.pop(job.id, None)
        alive = {j.pid for j in self.running.values()} | ({self.standby.pid} if self.standby else set())
        isolation.sweep_orphans(alive)
        if not job.done and (reason is not None or not kill):
            self.recipes = []  # (as in _start: what killed it may have been a warm-up)
            if not job.started and reason is None and job.attempt < 2:
                # it died before it read the request (killed while it waited, or warming up): nothing of
                # the user's ran, so the request goes to a fresh standby instead of reporting a crash
                self.queue.insert(0, Job(job.id, job.request, attempt=job.attempt + 1))
            else:
                grown_kb = max(reaped.max_rss_kb - job.rss_at_fork_kb, 0)
                fix_id, lost = lost_proofs.why_lost(job, reason, reaped.status, grown_kb)
                if lost is not None:  # the class's levels are out: only that fix's proof is lost (lost_proofs.py)
                    self.queue.insert(0, Job(job.id, lost_proofs.without_the_lost_proof(job.request, fix_id, lost)))
                else:
                    diagnostic, working_on = postmortem.lost_child_diagnostic(
                        job, reason, reaped.status, grown_kb, dump_fd_gone
                    )
                    again = lost_levels.without_the_lost_level(job, diagnostic, working_on)
                    if again is not None:  # a compile level: only that level of the class is lost (lost_levels.py)
                        self.queue.insert(0, Job(job.id, again))
                    else:
                        self._after_lost_child(job, diagnostic, working_on)
        os.close(job.dump_fd)
        if job.location is not None:
            job.location.close()
        if job.tail:  # (however it ended: its last cost, a cancel, a crash, the deadline, a trace needing its place)
            self.send(messages.End(id=job.id))

    def _after_lost_child(self, job: Job, diagnostic: Diagnostic, working_on: str) -> None:
        """One class's hang or crash costs only that class: the file is traced again without it (the
        class gets the diagnostic as its result), unless the file's own top level was running."""
        failed = dict(job.request.failed)
        if working_on and working_on not in failed and len(failed) < MAX_CLASS_RETRIES:
            diagnostic.class_name = working_on
            failed[working_on] = to_json(diagnostic)
            self.queue.insert(0, Job(job.id, replace(job.request, failed=failed)))
            return
        report = postmortem.report_for_lost_child(job, diagnostic)
        self.send(messages.Done(report=report, id=job.id))

    # -- the loop --------------------------------------------------------------------------------

    def _read_stdin(self) -> bool:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return False
        for request in self.stdin.feed(chunk):
            try:
                if isinstance(request, messages.ProtocolError):
                    raise request
                self.handle(request)
            except (ValueError, TypeError) as error:
                job_id = error.job_id if isinstance(error, messages.ProtocolError) else getattr(request, "id", None)
                sys.stderr.write(f"fxlens worker: protocol error: bad request: {error}\n")
                self.send(messages.RequestError(message=f"bad request: {error}", id=job_id))
        return True

    def _stop_everything(self) -> None:
        self.stopping = True
        if 0 in self.selector.get_map():
            self.selector.unregister(0)
        for job in list(self.running.values()):
            self._finish(job, kill=True)

    def serve(self) -> None:
        self.selector.register(0, selectors.EVENT_READ, None)
        parent = os.getppid()
        while not (self.stopping and not self.running):
            while self.queue and len(self.running) >= MAX_CHILDREN and not self.stopping:
                counting = next((j for j in self.running.values() if j.tail), None)
                if counting is None:
                    break
                self._finish(counting, kill=True)  # a trace waiting comes before costs (its own come later)
            while self.queue and len(self.running) < MAX_CHILDREN and not self.stopping:
                self._start(self.queue.pop(0))
            if not self.running:
                # the standby is made when no child runs: forking torch's worker takes 6-20 ms of a core, which
                # a trace's process could use, and so could the server and the editor while they show a
                # report (forked just after `done`, it held the server's reading of that `done` back 4 ms on
                # 2 cores). A trace that comes while costs are counted ends them and forks its own child.
                self._prepare_standby()
            now = time.monotonic()
            deadlines = [min(j.deadline, j.proof_deadline()) for j in self.running.values()]
            timeout = min(deadlines, default=now + 1.0) - now
            if any(j.deaf for j in self.running.values()):
                timeout = min(timeout, DEAF_POLL_SECONDS)
            timeout = min(timeout, PARENT_POLL_SECONDS)
            for key, _ in self.selector.select(max(timeout, 0.0)):
                if key.data is None:
                    if not self._read_stdin():
                        self._stop_everything()
                elif (job := self.running.get(key.data.id)) is key.data and job is not None:
                    # (a cancel read from stdin earlier in this same batch may have finished it, and
                    # closed its fd: reading that fd again would fail, or read a newer job's pipe)
                    self._read_child(job)
            if shield.stop_requested():  # a SIGTERM from outside fxlens's process tree: stop cleanly
                self._stop_everything()
            if not self.stopping and os.getppid() != parent:
                self._stop_everything()  # the server died and its end of stdin did not close: stop all the same
            for job in [j for j in self.running.values() if j.deaf]:
                self._read_child(job)  # it may have opened its channel again, or died
                if job.deaf and not isolation.running(job.pid):
                    self._finish(job, kill=False)
            for job in list(self.running.values()):
                if time.monotonic() >= job.deadline:
                    self._finish(job, kill=True, reason=f"it ran longer than {job.request.timeout:g} s")
                elif time.monotonic() >= job.proof_deadline():
                    self._finish(job, kill=True, reason="the proof of a fix ran longer than its limit")
        if self.standby is not None:
            isolation.discard(self.standby)
            self.standby = None
