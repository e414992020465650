"""How the PostgreSQL store commits: one transaction a barrier, sent from
the trio thread (no hop to the store's thread and back) and failing over to
the thread when its connection is cut or stalled, one prepared statement
reused from barrier to barrier (not parsed and planned again each time),
rows past the parameter limit in one commit all the same, and
``synchronous_commit``."""

from __future__ import annotations

import psycopg
import pytest
import trio

from agentrio.journal import SessionInfo
from agentrio.journal.ownership import LeaseLost
from agentrio.journal.postgres import PostgresStore
from agentrio.journal.postgres.database import VALUES_MAX, Database
from agentrio.journal.records import StepEnded, StepStarted
from agentrio.journal.store import StoreError

from .proxy import Proxy
from .records import tool_turns


def _next_xid(dsn: str) -> int:
    """The id the next transaction that writes will take."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()
        assert row is not None
        return int(row[0])


async def test_a_barrier_is_one_transaction_sent_from_the_trio_thread(dsn: str, monkeypatch) -> None:
    async with PostgresStore(dsn) as store:
        await store.create_session(SessionInfo("s1"))
        handed: list[object] = []
        thread = store._thread
        assert thread is not None
        monkeypatch.setattr(thread, "submit", lambda fn, *rest: handed.append(fn))
        before = _next_xid(dsn)
        for step in range(1, 11):
            await store.append("s1", [StepStarted(step), StepEnded(step)])
            await store.sync("s1")
        assert _next_xid(dsn) - before == 10
        assert handed == []  # nothing went through the store's thread
        monkeypatch.undo()
        assert [r for r in (await store.load_session("s1"))[1]][-1] == StepEnded(10)


async def test_a_commit_whose_connection_is_cut_fails_the_store_and_is_written_once_after(dsn: str) -> None:
    async with PostgresStore(dsn) as store:
        await store.create_session(SessionInfo("s1"))
        await store.append("s1", [StepStarted(1)])
        await store.sync("s1")
        with psycopg.connect(dsn, autocommit=True) as admin:  # the store's connection is cut
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        await store.append("s1", [StepEnded(1)])
        with pytest.raises(StoreError, match="failed"):
            await store.sync("s1")
        with trio.fail_after(10):
            await store.until_usable()
        await store.sync("s1")
        assert (await store.load_session("s1"))[1] == [StepStarted(1), StepEnded(1)]


async def test_a_commit_stalled_on_its_connection_ends_with_the_lease_not_later(postgres, dsn: str) -> None:
    database = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    async with trio.open_nursery() as nursery:
        proxy = Proxy(postgres.socket)
        await nursery.start(proxy.serve)
        async with PostgresStore(proxy.dsn(database), lease=2.0) as store:
            await store.create_session(SessionInfo("s1"))
            await store.append("s1", [StepStarted(1)])
            await store.sync("s1")
            proxy.stall()
            await store.append("s1", [StepEnded(1)])
            with trio.fail_after(2.0), pytest.raises(LeaseLost):
                await store.sync("s1")  # given up by the store's fencing, its connection ended
            proxy.heal()
        nursery.cancel_scope.cancel()


def _write_plans(db: Database) -> list[tuple[int, int]]:
    """Generic and custom plans of each prepared statement of the store's
    connection that writes records."""
    return db.connection.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
        "WHERE statement LIKE '%%INSERT INTO records%%'"
    ).fetchall()


async def test_each_commit_of_a_barrier_reuses_one_prepared_statement(dsn: str) -> None:
    # Prepared at its first use, and planned from the types of its casts,
    # whatever the values (the checksums are random integers).
    async with PostgresStore(dsn) as store:
        await store.create_session(SessionInfo("s1"))
        for step in range(1, 31):
            await store.append("s1", [StepStarted(step), StepEnded(step)])
            await store.sync("s1")
        (plans,) = await store._call(_write_plans)
    assert sum(plans) == 30, plans


async def test_a_commit_of_more_rows_than_a_values_list_takes_writes_them_all(dsn: str) -> None:
    records = tool_turns(VALUES_MAX // 4 + 1)
    assert len(records) > VALUES_MAX
    async with PostgresStore(dsn) as store:
        await store.create_session(SessionInfo("s1"))
        await store.append("s1", records)
        await store.sync("s1")
        assert (await store.load_session("s1"))[1] == records


@pytest.mark.parametrize("setting", ["on", "off"])
async def test_synchronous_commit_is_set_on_each_connection_the_store_makes(dsn: str, setting: str) -> None:
    def shown(db: Database) -> str:
        row = db.connection.execute("SHOW synchronous_commit").fetchone()
        assert row is not None
        return str(row[0])

    async with PostgresStore(dsn, synchronous_commit=setting) as store:  # type: ignore[arg-type]
        assert await store._call(shown) == setting
        await store._call(Database.reconnect)
        with psycopg.connect(dsn, autocommit=True) as admin:  # the store's connection is cut
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        await store._call(Database.reconnect)
        assert await store._call(shown) == setting


def test_synchronous_commit_takes_on_off_or_the_servers_setting() -> None:
    with pytest.raises(ValueError, match="synchronous_commit must be 'on', 'off' or None"):
        PostgresStore("host=/nowhere", synchronous_commit="remote_apply")  # type: ignore[arg-type]


async def test_a_commit_of_one_session_taken_over_writes_nothing_of_it(dsn: str) -> None:
    async with PostgresStore(dsn, lease=60) as former, PostgresStore(dsn) as taker:
        await former.create_session(SessionInfo("s1"))
        await former.append("s1", [StepStarted(1)])
        await former.sync("s1")
        with psycopg.connect(dsn, autocommit=True) as admin:  # the lease ran out
            admin.execute("UPDATE agentrio.leases SET expires_at = now() - interval '1 second'")
        await taker.acquire("s1")
        await former.append("s1", [StepEnded(1)])  # one session's batch, refused by its commit
        with pytest.raises(LeaseLost, match="taken over"):
            await former.sync("s1")
        assert (await taker.load_session("s1"))[1] == [StepStarted(1)]
