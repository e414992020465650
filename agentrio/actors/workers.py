"""The nursery an agent's tool workers run in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio


class WorkerHost:
    """A task of the agent's nursery whose own nursery runs the agent's tool
    workers, so that one cancel stops them all: a cancel scope of its own
    for each worker would cost about a tenth of the worker's bookkeeping.

    An agent runs one tool batch at a time, and a batch dispatches its next
    calls only once the earlier ones have reported, or abandons them after
    cancelling them. So the workers of one host are those of the current
    batch and cancelling the host is cancelling the batch; the agent starts
    a new host for the workers that come after.

    Guarantees: every worker given to ``start`` runs, even one given before
    the host's task has opened its nursery (it starts when the nursery
    opens) and even one given after ``cancel`` (it then runs cancelled:
    cancelled at its first checkpoint, its ``finally`` run). A cancelled
    host ends once its last worker has, and until then the agent's nursery
    supervises it, so a worker that ignores the cancel is never left
    unsupervised.
    """

    __slots__ = ("_nursery", "_waiting", "cancelled")

    def __init__(self) -> None:
        self._nursery: trio.Nursery | None = None
        #: Workers given before the nursery was open, with their arguments.
        self._waiting: list[tuple[Callable[..., Awaitable[None]], tuple[Any, ...]]] = []
        self.cancelled = False

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self.cancelled:
                nursery.cancel_scope.cancel()
            for worker, args in self._waiting:
                nursery.start_soon(worker, *args)
            self._waiting.clear()
            await trio.sleep_forever()

    def start(self, worker: Callable[..., Awaitable[None]], *args: Any) -> None:
        if self._nursery is None:
            self._waiting.append((worker, args))
        else:
            self._nursery.start_soon(worker, *args)

    def cancel(self) -> None:
        """Cancel every worker of the host, running or still to start."""
        self.cancelled = True
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
