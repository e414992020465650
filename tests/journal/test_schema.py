"""What makes a file a store: refusing foreign, damaged and newer files with a
clear error (never a fresh session), and migrating older ones."""

from __future__ import annotations

import os
import random
import sqlite3

import pytest

from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore
from agentrio.journal import (
    ForeignDatabase,
    SchemaTooNew,
    SessionInfo,
    SessionNotFound,
    SessionState,
    StoreCorrupt,
    StoreNotFound,
)
from agentrio.journal.checksum import record_checksum
from agentrio.journal.codec import encode_record, encode_state
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
    "tampering, error",
    [
        (
            # Rewritten with a valid checksum: what the store cannot decode.
            'UPDATE records SET data = \'{"type": "from_the_future"}\' WHERE seq = 5',
            "record 5 cannot be read",
        ),
        ("DELETE FROM records WHERE seq = 7", "record 7 is missing"),
        ("UPDATE records SET seq = 300 WHERE seq = 260", "record 260 is missing"),
        ("UPDATE records SET checksum = checksum + 1 WHERE seq = 9", "record 9 is damaged"),
        ("UPDATE records SET kind = 'turn_started' WHERE seq = 3", "record 3 is damaged"),
    ],
)
async def test_a_tampered_sqlite_journal_names_the_session_and_the_record(db, tampering, error):
    await make_store(db)
    with sqlite3.connect(db) as conn:
        conn.create_function("record_checksum", 4, record_checksum)
        conn.execute(tampering)
        if "from_the_future" in tampering:
            conn.execute(
                "UPDATE records SET checksum = record_checksum(session_id, seq, kind, CAST(data AS BLOB)) "
                "WHERE seq = 5"
            )
    conn.close()
    async with SQLiteStore(db) as store:
        for load in (store.load_state, store.load_session):
            with pytest.raises(StoreCorrupt, match=f"{db}: session 's1': {error}"):
                await load("s1")


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


async def test_a_store_truncated_to_nothing_is_damaged_not_a_new_store(db):
    await make_store(db)
    db.write_bytes(b"")
    with pytest.raises(StoreCorrupt, match=f"{db} is damaged: the file is empty"):
        async with Runtime(SQLiteStore(db)):
            pass
    assert db.read_bytes() == b""


async def test_a_new_store_file_is_never_empty(db):
    """It is made whole under another name and linked into place, which is
    what lets an empty file mean a truncated store."""
    async with SQLiteStore(db):
        assert db.stat().st_size > 0
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]


async def test_a_new_store_file_is_made_whole_without_hard_links_too(db, monkeypatch):
    def no_hard_links(*args):
        raise PermissionError("hard links are not supported here")

    monkeypatch.setattr(os, "link", no_hard_links)
    await make_store(db)
    async with SQLiteStore(db) as store:
        assert [info.session_id for info in await store.list_sessions()] == ["s1"]
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]


async def test_a_session_row_missing_beside_its_records_is_damage_not_a_new_session(db):
    await make_store(db, sessions=("s1", "s2"))
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM sessions WHERE session_id = 's1'")
    conn.close()
    async with Runtime(SQLiteStore(db)) as rt:
        with pytest.raises(StoreCorrupt, match=f"{db}: session 's1' has records but no session row"):
            await rt.create(spec(), "s1")
        assert "s1" not in rt.registry
        for load in (rt.store.load_state, rt.store.load_session):
            with pytest.raises(StoreCorrupt):
                await load("s1")
        # The other session, and one never created, are what they were.
        assert len((await rt.create(spec(), "s2")).messages) == 80
        assert (await rt.create(spec(), "s3")).messages == ()


async def test_records_left_without_their_session_row_can_be_deleted(db):
    await make_store(db)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM sessions WHERE session_id = 's1'")
    conn.close()
    async with SQLiteStore(db) as store:
        await store.delete_session("s1")
        with pytest.raises(SessionNotFound):
            await store.load_state("s1")


def flip(db, offset, mask):
    data = bytearray(db.read_bytes())
    data[offset] ^= mask
    db.write_bytes(bytes(data))


async def make_snapshotted_store(db):
    """Session ``s1``: 260 records, with a snapshot after record 130, so that
    a restore reads records as history and as records after the snapshot."""
    records = tool_turns(20)
    async with SQLiteStore(db) as store:
        await store.create_session(SessionInfo("s1"), records[:130])
        await store.save_snapshot("s1", SessionState.replay(records[:130]))
        await store.append("s1", records[130:])
    conn = sqlite3.connect(db)
    conn.execute("VACUUM")  # no stale copies of a record left in free pages
    rows = conn.execute("SELECT seq, data FROM records WHERE session_id = 's1'").fetchall()
    conn.close()
    return rows


async def test_every_byte_flipped_in_a_record_is_noticed_naming_the_record(db):
    """The whole journal never loads with a flipped byte. A restore reads
    the records after the snapshot and the messages before it: a flip
    there raises too, and one elsewhere leaves the state it restores as it
    was (the snapshot stands for those records)."""
    rows = await make_snapshotted_store(db)
    original = db.read_bytes()
    async with SQLiteStore(db) as store:
        intact = await store.load_state("s1")
    rng = random.Random(11)
    # Records found at exactly one place in the file (others are the same
    # JSON at another seq).
    unique = [(seq, data) for seq, data in rows if original.count(data.encode()) == 1]
    flips = []
    for seq, data in rng.sample(unique, 20):
        read_by_restore = seq > 130 or '"type":"message_appended"' in data
        start = original.index(data.encode())
        flips.append((seq, read_by_restore, start + rng.randrange(len(data)), rng.randrange(1, 256)))
    assert {(seq > 130, read) for seq, read, _, _ in flips} == {(True, True), (False, True), (False, False)}

    for seq, read_by_restore, offset, mask in flips:
        flip(db, offset, mask)
        damaged = f"{db}: session 's1': record {seq} is damaged"
        async with SQLiteStore(db) as store:
            with pytest.raises(StoreCorrupt, match=damaged):
                await store.load_session("s1")
            if read_by_restore:
                with pytest.raises(StoreCorrupt, match=damaged):
                    await store.load_state("s1")
            else:
                assert await store.load_state("s1") == intact
        db.write_bytes(original)


async def test_a_byte_flipped_in_a_snapshot_is_noticed(db):
    await make_snapshotted_store(db)
    with sqlite3.connect(db) as conn:
        (state,) = conn.execute("SELECT state FROM snapshots").fetchone()
    conn.close()
    flip(db, db.read_bytes().index(state.encode()) + len(state) // 2, 0x01)
    async with SQLiteStore(db) as store:
        with pytest.raises(StoreCorrupt, match=f"{db}: session 's1': its snapshot is damaged"):
            await store.load_state("s1")


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


async def test_a_store_from_before_checksums_gets_them_and_keeps_its_journal(db):
    Database(db, create=True, synchronous="NORMAL", migrations=MIGRATIONS[:1]).close()
    records = tool_turns(2)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO sessions VALUES ('s1', 1.0, NULL, 0)")
        conn.executemany(
            "INSERT INTO records VALUES ('s1', ?, ?, 2.0, ?)",
            [(seq, r.type, encode_record(r)) for seq, r in enumerate(records, 1)],
        )
        conn.execute(
            "INSERT INTO snapshots VALUES ('s1', 13, 4, ?)",
            (encode_state(SessionState.replay(records[:13])),),
        )
    conn.close()
    async with SQLiteStore(db) as store:
        assert (await store.load_session("s1"))[1] == records
        loaded = await store.load_state("s1")
    assert (loaded.state, loaded.unsnapshotted) == (SessionState.replay(records), 13)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (5,)
        conn.execute("UPDATE records SET checksum = checksum + 1 WHERE seq = 20")
    conn.close()
    async with SQLiteStore(db) as store:
        with pytest.raises(StoreCorrupt, match="record 20 is damaged"):
            await store.load_state("s1")


async def test_a_store_from_before_agent_names_keeps_its_sessions_and_names_new_ones(db):
    Database(db, create=True, synchronous="NORMAL", migrations=MIGRATIONS[:2]).close()
    records = tool_turns(2)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO sessions VALUES ('old', 1.0, NULL, 0)")
        conn.execute("INSERT INTO sessions VALUES ('fork', 2.0, 'old', 4)")
        conn.executemany(
            "INSERT INTO records VALUES ('old', ?, ?, 2.0, ?, ?)",
            [
                (seq, r.type, data, record_checksum("old", seq, r.type, data.encode()))
                for seq, r in enumerate(records, 1)
                for data in [encode_record(r)]
            ],
        )
    conn.close()
    async with Runtime(SQLiteStore(db)) as rt:
        assert (await rt.store.load_session("old")) == (SessionInfo("old", 1.0), records)
        old = await rt.create(spec(), "old")
        assert list(old.messages) == SessionState.replay(records).messages
        child = await rt.create(AgentSpec("child", ScriptedModel([])), parent=old)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (5,)
    conn.close()
    async with SQLiteStore(db) as store:
        *before, new = await store.list_sessions()
    # The old rows as they were, without the fields they never had.
    assert before == [SessionInfo("old", 1.0), SessionInfo("fork", 2.0, "old", 4)]
    assert (new.session_id, new.agent_name, new.spawned_by) == (child.session_id, "child", "old")
