"""One session's journal: records go to the store first, then to memory."""

from __future__ import annotations

import trio

from .projection import SessionState
from .records import Record
from .store import Store


class Journal:
    def __init__(self, store: Store, session_id: str, state: SessionState) -> None:
        self.store = store
        self.session_id = session_id
        self.state = state

    async def append(self, *records: Record) -> None:
        # Shielded: a record half-written because of a cancel would leave the
        # store and memory disagreeing.
        with trio.CancelScope(shield=True):
            await self.store.append(self.session_id, records)
        for record in records:
            self.state.apply(record)

    async def sync(self) -> None:
        """Durability barrier: returns once every appended record is durable."""
        with trio.CancelScope(shield=True):
            await self.store.sync(self.session_id)
