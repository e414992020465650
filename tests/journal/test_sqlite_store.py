"""What only the SQLite store does (the Store interface is tested on every
store in test_store.py)."""

from __future__ import annotations

import sqlite3
import threading

import pytest
import trio

from agentrio import SQLiteStore
from agentrio.journal import SessionInfo, StoreError
from agentrio.journal import buffered as buffered_module
from agentrio.journal.records import MessageAppended
from agentrio.journal.rows import record_rows
from agentrio.journal.sqlite import database as database_module
from agentrio.journal.sqlite.database import Batch, Database
from agentrio.messages import ToolResultMessage

from ..helpers import say
from .records import tool_turn, tool_turns


@pytest.fixture
async def sqlite_store(db):
    async with SQLiteStore(db) as store:
        yield store


async def test_closing_the_last_connection_removes_the_wal_file(db):
    async with SQLiteStore(db) as store:
        await store.create_session(SessionInfo("s1"))
        await store.append("s1", tool_turn(1, 1))
        assert db.with_name(db.name + "-wal").exists()
    assert not db.with_name(db.name + "-wal").exists()


async def test_what_the_fast_json_refuses_is_still_stored_and_read_back(sqlite_store, db):
    """Lone surrogates and integers beyond 64 bits, which orjson refuses and
    the standard json round-trips, come back as they went in."""
    odd = [
        MessageAppended(say("half a pair: \udc80")),
        MessageAppended(ToolResultMessage("c", "t", details={"big": 2**70, "text": "\ud800"})),
        # Not a float in disguise: one below the 64-bit range, read back exactly.
        MessageAppended(ToolResultMessage("d", "t", details={"big": -(2**63) - 1})),
    ]
    await sqlite_store.create_session(SessionInfo("s1"), odd[:1])
    await sqlite_store.append("s1", odd[1:])
    await sqlite_store.sync("s1")  # committed before another store reads the file
    async with SQLiteStore(db) as other:
        assert (await other.load_session("s1"))[1] == odd
        assert (await other.load_state("s1")).state.messages == [r.message for r in odd]


def test_a_commit_that_must_not_wait_leaves_the_batch_to_a_later_one(db):
    database = Database(db, create=True, synchronous="NORMAL")
    database.create_session(SessionInfo("s1"), [])
    batch = Batch(record_rows("s1", 0, tool_turn(1, 1), {}))
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    # With the store's usual busy timeout this would wait 10 s, then fail.
    assert database.try_write(batch) is False
    other.execute("COMMIT")
    other.close()
    assert database.load_records("s1")[1] == []
    assert database.try_write(batch) is True
    assert database.load_records("s1")[1] == tool_turn(1, 1)
    database.close()


async def test_a_barrier_while_another_process_writes_waits_in_the_thread(sqlite_store, db):
    await sqlite_store.create_session(SessionInfo("s1"))
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    order = []

    async def barrier():
        await sqlite_store.append("s1", tool_turn(1, 1))
        await sqlite_store.sync("s1")
        order.append("synced")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(barrier)
        for _ in range(10):  # the event loop goes on while the barrier waits
            await trio.sleep(0.001)
        order.append("other commits")
        other.execute("COMMIT")
    other.close()
    assert order == ["other commits", "synced"]
    assert (await sqlite_store.load_session("s1"))[1] == tool_turn(1, 1)


@pytest.mark.parametrize("count", [1, 64, 65], ids=["one INSERT", "the most one INSERT takes", "more"])
@pytest.mark.parametrize("snapshot", [False, True], ids=["records", "with a snapshot"])
def test_a_commit_that_must_not_wait_writes_every_batch_whole(db, count, snapshot):
    """Up to 64 records go in one statement; more, or a snapshot, in a
    transaction. Either way a record written twice fails the whole batch."""
    database = Database(db, create=True, synchronous="NORMAL")
    database.create_session(SessionInfo("s1"), [])
    records = tool_turns(6)[:count]
    snapshots = [("s1", count, 0, "{}", 0)] if snapshot else []
    assert database.try_write(Batch(record_rows("s1", 0, records, {}), snapshots)) is True
    again = record_rows("s1", count, records[:-1], {}) + record_rows("s1", count - 1, records[-1:], {})
    with pytest.raises(StoreError, match="a session is written by two stores at once"):
        database.try_write(Batch(again, snapshots))
    assert database.load_records("s1")[1] == records
    database.close()


@pytest.mark.parametrize(("synchronous", "where"), [("NORMAL", "trio"), ("FULL", "store")])
async def test_a_barrier_that_finds_the_thread_idle_commits_in_trio_only_if_nothing_waits_for_the_disk(
    db, monkeypatch, synchronous, where
):
    threads = []
    count = Database._count  # after every commit, wherever it ran

    def recorded(self, batch):
        threads.append("trio" if threading.current_thread() is threading.main_thread() else "store")
        count(self, batch)

    monkeypatch.setattr(Database, "_count", recorded)
    async with SQLiteStore(db, synchronous=synchronous) as store:
        await store.create_session(SessionInfo("s1"))
        for turn in (1, 2):
            await store.append("s1", tool_turn(turn, 2 * turn - 1))
            await store.sync("s1")
        assert threads == [where, where]
    async with SQLiteStore(db) as other:
        assert (await other.load_session("s1"))[1] == tool_turn(1, 1) + tool_turn(2, 3)


def _committed_records(db) -> int:
    """How many records another connection sees in the file."""
    other = sqlite3.connect(db)
    try:
        return other.execute("SELECT count(*) FROM records").fetchone()[0]
    finally:
        other.close()


async def test_appends_between_barriers_take_one_commit_in_the_trio_thread(db, monkeypatch):
    """No commit of its own, nor a trip to the store's thread, for what the
    next barrier commits anyway."""
    threads = []
    count = Database._count

    def recorded(self, batch):
        threads.append(("trio" if threading.current_thread() is threading.main_thread() else "store", batch))
        count(self, batch)

    monkeypatch.setattr(Database, "_count", recorded)
    records = tool_turn(1, 1)
    async with SQLiteStore(db) as store:
        await store.create_session(SessionInfo("s1"))
        for record in records:
            await store.append("s1", [record])
            await trio.sleep(0.001)  # the appending task yields, as an agent does
        assert threads == []
        assert _committed_records(db) == 0
        await store.sync("s1")
        assert [(where, len(batch.records)) for where, batch in threads] == [("trio", len(records))]
        assert _committed_records(db) == len(records)


async def test_what_no_barrier_asks_for_is_committed_soon_all_the_same(db):
    async with SQLiteStore(db) as store:
        await store.create_session(SessionInfo("s1"))
        await store.append("s1", tool_turn(1, 1))
        await trio.sleep(buffered_module.FLUSH_AFTER / 2)
        assert _committed_records(db) == 0
        with trio.fail_after(5):
            while _committed_records(db) < len(tool_turn(1, 1)):
                await trio.sleep(buffered_module.FLUSH_AFTER / 4)


async def test_many_appends_without_a_barrier_are_handed_to_the_thread(db, monkeypatch):
    """The buffer is bounded by count too, not only by ``FLUSH_AFTER``."""
    monkeypatch.setattr(buffered_module, "FLUSH_AFTER", 3600)
    monkeypatch.setattr(buffered_module, "FLUSH_APPENDS", 4)
    async with SQLiteStore(db) as store:
        await store.create_session(SessionInfo("s1"))
        records = tool_turn(1, 1)[:4]
        for record in records:
            await store.append("s1", [record])
        with trio.fail_after(5):
            while _committed_records(db) < len(records):
                await trio.sleep(0.01)


async def test_the_store_checkpoints_so_the_wal_stays_small(db, monkeypatch):
    monkeypatch.setattr(database_module, "CHECKPOINT_COMMITS", 4)
    wal = db.with_name(db.name + "-wal")
    async with SQLiteStore(db) as store:
        await store.create_session(SessionInfo("s1"))
        sizes = []
        for turn in range(1, 301):
            await store.append("s1", tool_turn(turn, 2 * turn - 1))
            await store.sync("s1")
            sizes.append(wal.stat().st_size)
    # 300 commits of a few pages each, without checkpoints: over 2 MB.
    assert max(sizes) < 300_000


async def test_a_read_only_store_reads_and_refuses_every_write(db):
    async with SQLiteStore(db) as writer:
        await writer.create_session(SessionInfo("s1"), tool_turn(1, 1))
        # Read while its writer has it open, and again once it has closed.
        async with SQLiteStore(db, read_only=True) as reader:
            assert (await reader.load_session("s1"))[1] == tool_turn(1, 1)
    before = db.read_bytes()
    async with SQLiteStore(db, read_only=True) as reader:
        assert [s.messages for s in await reader.list_summaries()] == [4]
        for write in (
            reader.create_session(SessionInfo("s2")),
            reader.append("s1", tool_turn(2, 1)),
            reader.claim_session("s1"),
            reader.delete_session("s1"),
        ):
            with pytest.raises(StoreError, match="was opened read-only"):
                await write
        assert (await reader.load_session("s1"))[1] == tool_turn(1, 1)
    assert db.read_bytes() == before
    assert not db.with_name(db.name + "-locks").exists()


async def test_a_read_only_store_refuses_a_missing_file_or_an_older_schema(db):
    with pytest.raises(StoreError, match="no store at"):
        async with SQLiteStore(db, read_only=True):
            pass
    assert not db.exists()
    async with SQLiteStore(db):  # a store of the current schema
        pass
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with pytest.raises(StoreError, match="opened read-only: open it once where it can be written"):
        async with SQLiteStore(db, read_only=True):
            pass
