"""The class costs a trace counts after its `done` (worker/analysis: FlopCounterMode runs each class once
more, 5-8 ms a class, so no fx or aten result waits for it): who hears them, per request.

The worker client's helper: it answers a request at its `done`, then hands the request's later `cost`
events here until the worker's `end`.
"""

from __future__ import annotations

from collections.abc import Callable

from fxlens import messages
from fxlens.report import Cost

# (class name, the fingerprint it was counted for, the cost)
OnCost = Callable[[str, str | None, Cost], None]


class LateCosts:
    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        # job id -> (its path, who hears its costs, who hears their end)
        self._listeners: dict[int, tuple[str, OnCost, Callable[[], None] | None]] = {}

    def listen(self, job_id: int, path: str, on_cost: OnCost, on_end: Callable[[], None] | None = None) -> None:
        self._listeners[job_id] = (path, on_cost, on_end)

    def listening(self, job_id: object) -> bool:
        return job_id in self._listeners

    def give_up(self, path: str) -> list[int]:
        """A newer trace of `path` is on its way: the jobs whose costs are still coming for it (to cancel;
        what they would have counted, the newer one counts)."""
        earlier = [i for i, (p, _, _) in self._listeners.items() if p == path]
        for job_id in earlier:
            del self._listeners[job_id]
        return earlier

    def drop(self, job_id: int) -> None:
        self._listeners.pop(job_id, None)

    def clear(self) -> None:
        self._listeners.clear()

    def heard(self, event: messages.Event) -> None:
        """An event of a request already answered: one of its costs, or the end of them."""
        job_id = getattr(event, "id", None)
        if not isinstance(job_id, int) or job_id not in self._listeners:
            return
        listener = self._listeners[job_id]
        if isinstance(event, (messages.End, messages.Cancelled)):
            del self._listeners[job_id]
            if isinstance(event, messages.End) and listener[2] is not None:
                try:
                    listener[2]()
                except Exception as error:  # noqa: BLE001  a failing listener: the costs are over all the same
                    self.log(f"the end of a trace's costs was not heard: {type(error).__name__}: {error}")
        elif isinstance(event, messages.ClassCost):
            try:
                listener[1](event.class_name, event.fingerprint, event.read())
            except Exception as error:  # noqa: BLE001  a bad cost, or a failing listener: only that number is missing
                self.log(f"a class cost was dropped: {type(error).__name__}: {error}")
