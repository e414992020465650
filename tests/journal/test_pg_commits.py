"""How the PostgreSQL store commits: one prepared statement reused from
barrier to barrier (not parsed and planned again each time), rows past the
parameter limit in one commit all the same, and ``synchronous_commit``."""

from __future__ import annotations

import psycopg
import pytest

from agentrio.journal import SessionInfo
from agentrio.journal.postgres import PostgresStore
from agentrio.journal.postgres.database import VALUES_MAX, Database
from agentrio.journal.records import StepEnded, StepStarted

from .records import tool_turns


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
