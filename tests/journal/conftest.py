from __future__ import annotations

from pathlib import Path

import pytest

from agentrio import MemoryStore

from .places import DURABLE, Place


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def dsn(postgres) -> str:
    """A new, empty database, dropped after the test."""
    dsn = postgres.new_database()
    yield dsn
    postgres.drop_database(dsn)


def _place(request, kind: str) -> Place:
    if kind == "sqlite":
        return Place("sqlite", str(request.getfixturevalue("db")))
    return Place("postgres", request.getfixturevalue("dsn"))


@pytest.fixture(params=DURABLE)
def new_store(request) -> Place:
    """Each durable store in turn (a test using it runs once for each)."""
    return _place(request, request.param)


@pytest.fixture
async def store(new_store):
    async with new_store() as store:
        yield store


@pytest.fixture(params=["memory", *DURABLE])
def stores(request):
    """Makes the store for each Runtime of a test: the same MemoryStore each
    time, or a new store object on the same database."""
    if request.param == "memory":
        memory = MemoryStore()
        return lambda: memory
    return _place(request, request.param)
