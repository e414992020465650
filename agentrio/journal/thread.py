"""The thread that owns a store's connection."""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any, TypeVar, cast

import trio

T = TypeVar("T")

#: What a call returned, or what it raised.
Result = tuple[Any, BaseException | None]
#: A function, its arguments, and what to do with its result in the trio thread.
Call = tuple[Callable[..., Any], tuple[Any, ...], Callable[[Result], None]]


class DatabaseThread:
    """Runs the calls handed to it one at a time, in order, in one thread:
    SQLite connections belong to the thread that made them, and a single
    writer never contends with itself. ``serve`` runs the thread under a
    trio task (start it in a nursery); ``stop`` ends it after the calls
    already handed over."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[Call | None] = queue.SimpleQueue()
        #: Calls handed over whose result is not delivered yet.
        self._pending = 0

    @property
    def idle(self) -> bool:
        """Whether every call handed over has run and been delivered, so that
        the trio thread may use what the calls use. Read in the trio thread."""
        return not self._pending

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        token = trio.lowlevel.current_trio_token()
        task_status.started()
        await trio.to_thread.run_sync(self._loop, token, thread_name=self._name)

    def _loop(self, token: trio.lowlevel.TrioToken) -> None:
        while (call := self._calls.get()) is not None:
            fn, args, deliver = call
            try:
                result: Result = (fn(*args), None)
            except BaseException as exc:  # noqa: BLE001 - the caller's to handle
                result = (None, exc)
            token.run_sync_soon(self._deliver, deliver, result)

    def _deliver(self, deliver: Callable[[Result], None], result: Result) -> None:
        self._pending -= 1
        deliver(result)

    def stop(self) -> None:
        self._calls.put(None)

    def submit(
        self, fn: Callable[..., Any], args: tuple[Any, ...], deliver: Callable[[Result], None]
    ) -> None:
        """Run ``fn(*args)`` in the thread, then ``deliver((value, exception))``
        in the trio thread."""
        self._pending += 1
        self._calls.put((fn, args, deliver))

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the thread. Once handed over, a call is waited
        for even by a cancelled caller: what it does to the file must be known."""
        done = trio.Event()
        results: list[Result] = []

        def deliver(result: Result) -> None:
            results.append(result)
            done.set()

        self.submit(fn, args, deliver)
        with trio.CancelScope(shield=True):
            await done.wait()
        value, error = results[0]
        if error is not None:
            raise error
        return cast("T", value)
