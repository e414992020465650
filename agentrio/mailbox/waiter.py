"""One task waiting for another to wake it."""

from __future__ import annotations

import trio


class Waiter:
    """A place for one task to wait until another wakes it: what a hand-off
    between two known tasks needs, for less than a ``ParkingLot`` or a
    ``trio.Event`` per wait.

    ``wait`` parks the calling task until ``wake`` or a cancel; at most one
    task waits at a time. ``wake`` reschedules the waiting task, if any, and
    is remembered by nobody: a task re-checks what it waits for after each
    ``wait``, and wakes that find no one waiting are free.
    """

    __slots__ = ("_task",)

    def __init__(self) -> None:
        self._task: trio.lowlevel.Task | None = None

    async def wait(self) -> None:
        self._task = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _: object) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED

    def wake(self) -> None:
        if (task := self._task) is not None:
            self._task = None
            trio.lowlevel.reschedule(task)
