from __future__ import annotations

import pytest

from agentrio import SQLiteStore


@pytest.fixture
def db(tmp_path):
    return tmp_path / "sessions.db"


@pytest.fixture
async def store(db):
    async with SQLiteStore(db) as store:
        yield store
