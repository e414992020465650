"""One session's journal: records go to the store first, then to memory."""

from __future__ import annotations

from .projection import SessionState
from .records import Record
from .store import Store


class Journal:
    def __init__(self, store: Store, session_id: str, state: SessionState) -> None:
        self.store = store
        self.session_id = session_id
        self.state = state

    async def append(self, *records: Record) -> None:
        # The store's append is atomic with respect to cancellation, so the
        # records reach memory exactly when they reached the store.
        await self.store.append(self.session_id, records)
        for record in records:
            self.state.apply(record)

    async def sync(self) -> None:
        """Durability barrier: returns once every appended record is durable."""
        await self.store.sync(self.session_id)
