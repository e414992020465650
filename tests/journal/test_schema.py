"""What makes a file a store: refusing foreign, damaged and newer files with a
clear error (never a fresh session), and migrating older ones."""

from __future__ import annotations

import sqlite3

import pytest

from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore
from agentrio.journal import (
    ForeignDatabase,
    SchemaTooNew,
    SessionInfo,
    StoreCorrupt,
    StoreNotFound,
)
from agentrio.journal.sqlite.database import Database
from agentrio.journal.sqlite.schema import MIGRATIONS, SCHEMA_VERSION

from .records import tool_turns

PAGE = 4096


def spec():
    return AgentSpec("a", ScriptedModel([]))


async def make_store(db, sessions=("s1",)):
    async with SQLiteStore(db) as store:
        for session_id in sessions:
            await store.create_session(SessionInfo(session_id), tool_turns(20))


async def test_a_file_that_is_not_a_database_is_refused_untouched(db):
    db.write_bytes(b"not a database at all " * 100)
    before = db.read_bytes()
    with pytest.raises(StoreCorrupt, match=f"{db} is damaged or is not an SQLite database"):
        async with Runtime(SQLiteStore(db)):
            pass
    assert db.read_bytes() == before


async def test_a_damaged_session_is_an_error_not_a_fresh_session(db):
    await make_store(db)
    data = bytearray(db.read_bytes())
    data[2 * PAGE :] = b"\x5a" * (len(data) - 2 * PAGE)  # keep the header and the schema
    db.write_bytes(bytes(data))
    async with Runtime(SQLiteStore(db)) as rt:
        with pytest.raises(StoreCorrupt, match="malformed"):
            await rt.create(spec(), "s1")
        assert "s1" not in rt.registry


@pytest.mark.parametrize(
    "setup",
    [
        ["CREATE TABLE users (name TEXT)"],
        ["PRAGMA application_id = 42"],
        ["PRAGMA user_version = 3"],
    ],
    ids=["tables", "application_id", "user_version"],
)
async def test_another_programs_database_is_refused_untouched(db, setup):
    with sqlite3.connect(db) as conn:
        for statement in setup:
            conn.execute(statement)
    conn.close()
    before = db.read_bytes()
    with pytest.raises(ForeignDatabase, match=f"{db} is an SQLite database of something else"):
        async with Runtime(SQLiteStore(db)):
            pass
    assert db.read_bytes() == before
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


async def test_a_schema_from_the_future_is_refused(db):
    await make_store(db)
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNew, match=f"version {SCHEMA_VERSION + 1}, newer than the {SCHEMA_VERSION}"):
        async with SQLiteStore(db):
            pass


async def test_an_empty_file_becomes_a_store(db):
    db.touch()
    await make_store(db)
    async with SQLiteStore(db) as store:
        assert [info.session_id for info in await store.list_sessions()] == ["s1"]


async def test_a_missing_file_is_created_unless_told_not_to(db):
    with pytest.raises(StoreNotFound, match=f"no store at {db}"):
        async with SQLiteStore(db, create=False):
            pass
    assert not db.exists()
    await make_store(db)
    async with SQLiteStore(db, create=False) as store:
        assert len(await store.list_sessions()) == 1


def test_migrations_run_in_order_once_and_keep_the_data(db):
    added = ("CREATE TABLE labels (session_id TEXT, label TEXT)", "INSERT INTO labels VALUES ('s1', 'new')")
    old = Database(db, create=True, synchronous="NORMAL")
    old.create_session(SessionInfo("s1"), [])
    old.close()
    for _ in range(2):  # the second open has nothing to do
        new = Database(db, create=True, synchronous="NORMAL", migrations=(*MIGRATIONS, added))
        new.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION + 1,)
        assert conn.execute("SELECT session_id, label FROM labels").fetchall() == [("s1", "new")]
        assert conn.execute("SELECT session_id FROM sessions").fetchall() == [("s1",)]
    conn.close()
