from __future__ import annotations

import pytest

from agentrio import MemoryStore, SQLiteStore


@pytest.fixture
def db(tmp_path):
    return tmp_path / "sessions.db"


@pytest.fixture
async def store(db):
    async with SQLiteStore(db) as store:
        yield store


@pytest.fixture(params=["memory", "sqlite"])
def stores(request, db):
    """Makes the store for each Runtime of a test: the same MemoryStore each
    time, or a new SQLiteStore on the same file."""
    if request.param == "memory":
        memory = MemoryStore()
        return lambda: memory
    return lambda: SQLiteStore(db)
