"""What only the SQLite store does (the Store interface is tested on every
store in test_store.py)."""

from __future__ import annotations

from agentrio import SQLiteStore
from agentrio.journal import SessionInfo

from .records import tool_turn


async def test_closing_the_last_connection_removes_the_wal_file(db):
    async with SQLiteStore(db) as store:
        await store.create_session(SessionInfo("s1"))
        await store.append("s1", tool_turn(1, 1))
        assert db.with_name(db.name + "-wal").exists()
    assert not db.with_name(db.name + "-wal").exists()
