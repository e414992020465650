"""One session's journal: records go to the store first, then to memory."""

from __future__ import annotations

from collections.abc import Callable

from ..messages.protocol import GrowingProjection
from .projection import SessionState
from .records import Record
from .store import Store

#: Records a journal gathers before it offers the store a snapshot, which
#: bounds what a restore replays.
SNAPSHOT_EVERY = 1000


class Journal:
    """One session's journal and the state projected from it.

    Records go to the store first, then to ``state``: memory never runs
    ahead of what the store has taken. ``append`` never waits between the
    two, so a cancel cannot split them; ``sync`` is the durability barrier.
    One writer at a time: the owning actor's tasks (``guard``, when set, is
    called before each append to check it).
    """

    def __init__(self, store: Store, session_id: str, state: SessionState, *, unsnapshotted: int = 0) -> None:
        self.store = store
        self.session_id = session_id
        self.state = state
        #: Called before every append; raises when the caller may not write.
        self.guard: Callable[[], None] | None = None
        #: Records appended since the store's latest snapshot of this session.
        self.unsnapshotted = unsnapshotted
        self._context: GrowingProjection | None = None

    async def append(self, *records: Record) -> None:
        if self.guard is not None:
            self.guard()
        # ``Store.append`` never waits, so no cancel can fall between the store
        # taking the records and memory applying them: the two always agree.
        await self.store.append(self.session_id, records)
        for record in records:
            self.state.apply(record)
        self.unsnapshotted += len(records)
        if self.unsnapshotted >= SNAPSHOT_EVERY:
            await self.store.save_snapshot(self.session_id, self.state)
            self.unsnapshotted = 0

    def context(self) -> GrowingProjection:
        """The provider projection of committed history, for a run to grow.

        Kept from one run to the next, so a run does not re-project the
        whole conversation; rebuilt when committed history is not the one
        it grew (a compaction's new head, a run that ended with messages it
        never committed).
        """
        messages = self.state.messages
        if self._context is None or not self._context.mirrors(messages):
            self._context = GrowingProjection(messages)
        return self._context

    async def sync(self) -> None:
        """Durability barrier: returns once every appended record is durable."""
        await self.store.sync(self.session_id)
