from __future__ import annotations

import os

import pytest

from agentrio import MemoryStore, SQLiteStore
from agentrio.journal import PostgresStore

from ..pgcluster import Cluster, ServerMissing

#: Leases in the tests: short, so that takeovers happen within a test.
LEASE = 1.0


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server of our own for the whole test session."""
    try:
        cluster = Cluster.start(fsync=False)
    except ServerMissing as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the PostgreSQL store: {exc}", pytrace=False)
        pytest.skip(str(exc))
    yield cluster
    cluster.stop()


@pytest.fixture
def db(tmp_path):
    return tmp_path / "sessions.db"


@pytest.fixture
def dsn(postgres):
    """A new, empty database."""
    return postgres.new_database()


@pytest.fixture(params=["sqlite", "postgres"])
def new_store(request, tmp_path):
    """Makes a new store object on the same database each time it is called:
    an SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        db = tmp_path / "sessions.db"
        return lambda: SQLiteStore(db)
    dsn = request.getfixturevalue("dsn")
    return lambda: PostgresStore(dsn, lease=LEASE)


@pytest.fixture
async def store(new_store):
    async with new_store() as store:
        yield store


@pytest.fixture(params=["memory", "durable"])
def stores(request):
    """Makes the store for each Runtime of a test: the same MemoryStore each
    time, or a new store object on the same database (SQLite and
    PostgreSQL)."""
    if request.param == "memory":
        memory = MemoryStore()
        return lambda: memory
    return request.getfixturevalue("new_store")
