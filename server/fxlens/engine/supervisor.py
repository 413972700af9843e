"""Keeps one warm worker alive for the configured interpreter.

Started at `initialize` so torch is imported before the first file opens. A worker that dies is
restarted with back-off; one that cannot start (no such interpreter, no torch) is reported once and
left alone until the settings change or the user asks for a restart: no restart storm.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from fxlens.engine.quarantine import Quarantine
from fxlens.engine.worker_client import WorkerClient, WorkerUnavailable

BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)
# a worker that ran this long before dying counts as healthy: the back-off starts over
HEALTHY_SECONDS = 60.0

OnState = Callable[[str, str], None]  # ("ready" | "starting" | "error", message)


class Supervisor:
    def __init__(self, on_state: OnState, on_ready: Callable[[], None], backoff: tuple[float, ...] = BACKOFF) -> None:
        self.on_state = on_state
        self.on_ready = on_ready
        self.backoff = backoff
        self.python: str | None = None
        self.client: WorkerClient | None = None
        self.starts = 0
        self.error: WorkerUnavailable | None = None
        self._ready: asyncio.Future[WorkerClient] | None = None
        self._launch: asyncio.Task[None] | None = None
        self._failures = 0
        self._started_at = 0.0
        self._stopping = False
        # the files whose traces killed a worker: held back across restarts (engine/quarantine.py)
        self.quarantine = Quarantine()

    # -- public ----------------------------------------------------------------------------------

    def start(self, python: str) -> None:
        """Begin starting a worker for `python` (returns at once; `get()` waits for it)."""
        self.python = python
        self._stopping = False
        self._failures = 0
        self._begin(delay=0.0)

    async def get(self) -> WorkerClient:
        """The running worker, waiting while it starts; WorkerUnavailable if it cannot run."""
        if self._ready is None:
            raise WorkerUnavailable("the worker has not been started")
        return await asyncio.shield(self._ready)

    async def restart(self, python: str | None = None) -> WorkerClient:
        await self._stop_current()
        self.start(python or self.python or "")
        return await self.get()

    async def stop(self) -> None:
        self._stopping = True
        await self._stop_current()

    @property
    def pid(self) -> int | None:
        client = self.client
        return client.process.pid if client is not None and client.process is not None and client.alive else None

    # -- internals -------------------------------------------------------------------------------

    def _begin(self, delay: float) -> None:
        if self._ready is None or self._ready.done():
            self._ready = asyncio.get_running_loop().create_future()
            # nobody may be waiting yet: keep an unretrieved failure from being logged as lost
            self._ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._launch = asyncio.create_task(self._run(delay, self._ready))

    async def _run(self, delay: float, ready: asyncio.Future[WorkerClient]) -> None:
        if delay:
            self.on_state("starting", f"the worker died; restarting in {delay:g} s")
            await asyncio.sleep(delay)
        else:
            self.on_state("starting", f"starting the worker ({self.python})")
        client = WorkerClient(self.python or "", quarantine=self.quarantine)
        client.on_exit = lambda code: self._exited(client, code)
        self.starts += 1
        try:
            await client.start()
        except asyncio.CancelledError:
            if client.process is not None and client.process.returncode is None:
                client.process.kill()  # stopped while torch was still importing
            raise
        except Exception as error:  # noqa: BLE001  anything else is no reason to leave `get()` waiting forever
            if not isinstance(error, WorkerUnavailable):
                error = WorkerUnavailable(
                    f"the worker ({self.python}) could not start: {type(error).__name__}: {error}",
                    "Set fxlens.python to a Python interpreter that has torch.",
                )
            self.error = error
            self.on_state("error", error.message + (f" — {error.fix}" if error.fix else ""))
            if not ready.done():
                ready.set_exception(error)
            return
        self.client, self.error = client, None
        self._started_at = time.monotonic()
        if not ready.done():
            ready.set_result(client)
        self.on_state("ready", f"torch {client.info.torch if client.info else '?'} in {self.python}")
        self.on_ready()

    def _exited(self, client: WorkerClient, code: int) -> None:
        if self._stopping or client is not self.client:
            return
        self.client = None
        if client.lost:
            # it died while tracing: the files then in flight answer for it (quarantine.py), not the
            # interpreter; the others must go on being traced, so this never counts towards giving up
            self._ready = None
            self._begin(self.backoff[0])
            return
        if time.monotonic() - self._started_at > HEALTHY_SECONDS:
            self._failures = 0
        if self._failures >= len(self.backoff):
            error = WorkerUnavailable(
                f"the worker keeps exiting (last status {code}); gave up restarting it",
                "Run the command `fxlens.restartWorker` after fixing the cause.",
            )
            self.error = error
            self._ready = asyncio.get_running_loop().create_future()
            self._ready.set_exception(error)
            self._ready.exception()
            self.on_state("error", error.message)
            return
        delay = self.backoff[self._failures]
        self._failures += 1
        self._ready = None
        self._begin(delay)

    async def _stop_current(self) -> None:
        launch, client = self._launch, self.client
        self.client = None
        if launch is not None and not launch.done():
            launch.cancel()
            await asyncio.gather(launch, return_exceptions=True)
        if client is not None:
            await client.stop()
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(WorkerUnavailable("the worker was stopped"))
