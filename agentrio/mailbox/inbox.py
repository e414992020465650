"""The agent's inbox: a next-step queue and a next-turn queue.

Next-step input (steering, injected context) joins the current turn before
its next model request; next-turn input (follow-ups) waits for the current
turn to end and starts a turn of its own. Every change is one journal record,
written before memory changes, so the queues survive a crash.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from .._ids import new_id
from ..messages import UserMessage
from .items import TARGETS, InboxSpliced, QueuedInput, SpliceReason, Target

Input = str | UserMessage | QueuedInput


def as_queued(item: Input) -> QueuedInput:
    if isinstance(item, QueuedInput):
        return item
    if isinstance(item, str):
        item = UserMessage(item)
    if not isinstance(item, UserMessage):
        raise TypeError(f"inbox input must be a str or a UserMessage, got {item!r}")
    return QueuedInput(new_id("in"), item)


def normalize_range(length: int, start: int, delete_count: int | None) -> tuple[int, int]:
    """Array-splice semantics: a negative ``start`` counts from the end, both
    are clamped to the queue, ``None`` deletes to the end."""
    if start < 0:
        start = max(length + start, 0)
    start = min(start, length)
    room = length - start
    count = room if delete_count is None else min(max(delete_count, 0), room)
    return start, count


class Inbox:
    """An agent's two input queues, next-step and next-turn.

    The queues themselves are state the journal projects (``queues(target)``
    returns the live list); the inbox changes them only by recording an
    ``InboxSpliced`` through ``record``, which appends it durably and then
    applies it, so memory never runs ahead of the journal. ``on_change`` is
    told of every change after it is recorded.

    Owned by the agent actor: only the agent's own tasks call it. A cancel
    cannot split a change: ``record`` never waits between storing and
    applying.
    """

    def __init__(
        self,
        queues: Callable[[Target], list[QueuedInput]],
        record: Callable[[InboxSpliced], Awaitable[None]],
        on_change: Callable[[InboxSpliced, list[QueuedInput]], None],
    ) -> None:
        self._queues = queues
        self._record = record
        self._on_change = on_change

    @property
    def next_step(self) -> tuple[QueuedInput, ...]:
        return tuple(self._queues("next_step"))

    @property
    def next_turn(self) -> tuple[QueuedInput, ...]:
        return tuple(self._queues("next_turn"))

    def __bool__(self) -> bool:
        return bool(self._queues("next_step") or self._queues("next_turn"))

    async def splice(
        self,
        target: Target,
        start: int,
        delete_count: int | None = None,
        items: Iterable[Input] = (),
        *,
        reason: SpliceReason | None = None,
    ) -> list[QueuedInput]:
        """Replace ``delete_count`` items of ``target`` from ``start`` with
        ``items``; returns what was removed. A no-op writes nothing."""
        if target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
        queue = self._queues(target)
        start, count = normalize_range(len(queue), start, delete_count)
        queued = [as_queued(i) for i in items]
        if not count and not queued:
            return []
        if reason is None:
            reason = "send" if queued else "remove"
        record = InboxSpliced(target, start, count, queued, reason)
        removed = queue[start : start + count]
        await self._record(record)
        self._on_change(record, removed)
        return removed

    async def put(self, item: Input, target: Target) -> QueuedInput:
        """Append one input to ``target``."""
        queued = as_queued(item)
        await self.splice(target, len(self._queues(target)), 0, [queued])
        return queued

    async def claim(self, target: Target) -> list[QueuedInput]:
        """Take the input a step starts with: every next-step message, then,
        when ``target`` is next-turn, the first next-turn message. Injected
        context therefore comes before the queued prompt, and the next
        follow-up waits for the next turn."""
        # (An empty queue is skipped before a splice: most steps claim nothing.)
        claimed = await self.splice("next_step", 0, None, reason="claim") if self._queues("next_step") else []
        if target == "next_turn" and self._queues("next_turn"):
            claimed += await self.splice("next_turn", 0, 1, reason="claim")
        return claimed

    async def remove(self, input_id: str) -> bool:
        """Discard one pending input; False when it is no longer pending."""
        for target in TARGETS:
            for index, item in enumerate(self._queues(target)):
                if item.id == input_id:
                    await self.splice(target, index, 1, reason="remove")
                    return True
        return False

    async def replace(self, input_id: str, message: Input) -> bool:
        """Put ``message`` in the place of the pending input ``input_id``,
        under the same id (whoever waits for it gets the replacement's
        answer); False when it is no longer pending."""
        for target in TARGETS:
            for index, item in enumerate(self._queues(target)):
                if item.id == input_id:
                    replacement = QueuedInput(input_id, as_queued(message).message)
                    await self.splice(target, index, 1, [replacement], reason="replace")
                    return True
        return False

    async def clear(self) -> list[QueuedInput]:
        """Discard every pending input."""
        removed: list[QueuedInput] = []
        for target in TARGETS:
            removed += await self.splice(target, 0, None, reason="clear")
        return removed
