"""What makes a PostgreSQL schema a store: refusing foreign and newer ones and
bad connection strings with a clear error, and migrating older ones once."""

from __future__ import annotations

import psycopg
import pytest
import trio

from agentrio import AgentSpec, Runtime, ScriptedModel
from agentrio.journal import (
    ForeignDatabase,
    PostgresStore,
    SchemaTooNew,
    SessionInfo,
    SessionState,
    StoreCorrupt,
    StoreError,
    StoreNotFound,
)
from agentrio.journal.codec import encode_record, encode_state
from agentrio.journal.postgres.database import Database
from agentrio.journal.postgres.schema import MIGRATIONS, SCHEMA_VERSION

from .records import tool_turns


def tables(dsn, schema="agentrio") -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1", (schema,))
        return [name for (name,) in rows]


async def test_a_new_database_becomes_a_store_in_its_own_schema(dsn):
    async with PostgresStore(dsn) as store:
        await store.create_session(SessionInfo("s1"), tool_turns(1))
    assert tables(dsn) == ["blobs", "inputs", "leases", "records", "sessions", "snapshots", "store"]
    assert tables(dsn, "public") == []
    async with PostgresStore(dsn, schema="other") as store:
        assert await store.list_sessions() == []


async def test_another_programs_schema_is_refused_untouched(dsn):
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE SCHEMA agentrio")
        conn.execute("CREATE TABLE agentrio.sessions (name text)")
    with pytest.raises(ForeignDatabase, match="schema 'agentrio' belongs to something else"):
        async with Runtime(PostgresStore(dsn)):
            pass
    assert tables(dsn) == ["sessions"]


async def test_a_schema_from_the_future_is_refused(dsn):
    async with PostgresStore(dsn):
        pass
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE agentrio.store SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaTooNew, match=f"version {SCHEMA_VERSION + 1}, newer than the {SCHEMA_VERSION}"):
        async with PostgresStore(dsn):
            pass


async def test_a_missing_store_is_created_unless_told_not_to(dsn):
    with pytest.raises(StoreNotFound, match="no store in schema 'agentrio' of postgresql "):
        async with PostgresStore(dsn, create=False):
            pass
    assert tables(dsn) == []
    async with PostgresStore(dsn):
        pass
    async with PostgresStore(dsn, create=False) as store:
        assert await store.list_sessions() == []


@pytest.mark.parametrize(
    "dsn, error",
    [
        ("host=/nonexistent/folder dbname=x", r"postgresql x on /nonexistent/folder: connection .*failed"),
        ("not a = connection = string", "not a PostgreSQL connection string"),
    ],
)
async def test_a_database_that_cannot_be_reached_is_a_store_error(dsn, error):
    with pytest.raises(StoreError, match=error):
        async with PostgresStore(dsn):
            pass


async def test_a_session_id_postgresql_cannot_hold_is_refused(dsn):
    async with PostgresStore(dsn) as store:
        with pytest.raises(ValueError, match="NUL"):
            await store.create_session(SessionInfo("bad\x00id"))
        with pytest.raises(ValueError, match="NUL"):
            await store.load_state("bad\x00id")
        await store.create_session(SessionInfo("fine"))  # the store goes on
        assert [info.session_id for info in await store.list_sessions()] == ["fine"]


async def test_any_schema_name_postgresql_holds_is_a_store_of_its_own(dsn):
    odd = 'odd "name"; -- ' + "x" * 32
    async with PostgresStore(dsn, schema=odd) as store:
        await store.create_session(SessionInfo("s1"), tool_turns(1))
        follower_sees = await store.next_records("s1", 0)
    assert len(follower_sees) == len(tool_turns(1))
    assert len(tables(dsn, odd)) == 7
    for schema in ("", "x" * 56):
        with pytest.raises(ValueError, match="schema must be a name of 1 to 55 bytes"):
            PostgresStore(dsn, schema=schema)


async def test_stores_opening_a_new_database_at_once_migrate_it_once(dsn):
    async def open_one():
        async with PostgresStore(dsn) as store:
            await store.list_sessions()

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(open_one)
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT application, version FROM agentrio.store").fetchall() == [
            ("agentrio", SCHEMA_VERSION)
        ]


def test_migrations_run_in_order_once_and_keep_the_data(dsn):
    added = (
        "CREATE TABLE labels (session_id text, label text)",
        "INSERT INTO labels VALUES ('s1', 'new')",
    )
    options = {"schema": "agentrio", "holder": "test", "lease_seconds": 1.0, "create": True}
    old = Database(dsn, **options)
    old.create_session(SessionInfo("s1"), [])
    old.close()
    for _ in range(2):  # the second open has nothing to do
        Database(dsn, **options, migrations=(*MIGRATIONS, added)).close()
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT version FROM agentrio.store").fetchall() == [(SCHEMA_VERSION + 1,)]
        assert conn.execute("SELECT session_id, label FROM agentrio.labels").fetchall() == [("s1", "new")]
        assert conn.execute("SELECT session_id FROM agentrio.sessions").fetchall() == [("s1",)]


async def test_a_store_from_before_agent_names_keeps_its_sessions_and_names_new_ones(dsn):
    options = {"schema": "agentrio", "holder": "test", "lease_seconds": 1.0, "create": True}
    Database(dsn, **options, migrations=MIGRATIONS[:1]).close()
    records = tool_turns(2)
    with psycopg.connect(dsn) as conn:
        conn.execute("INSERT INTO agentrio.sessions VALUES ('old', 1.0, NULL, 0), ('fork', 2.0, 'old', 4)")
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO agentrio.records VALUES ('old', %s, %s, 2.0, %s)",
                [(seq, r.type, encode_record(r)) for seq, r in enumerate(records, 1)],
            )
    async with Runtime(PostgresStore(dsn)) as rt:
        assert (await rt.store.load_session("old")) == (SessionInfo("old", 1.0), records)
        old = await rt.create(AgentSpec("a", ScriptedModel([])), "old")
        assert list(old.messages) == SessionState.replay(records).messages
        child = await rt.create(AgentSpec("child", ScriptedModel([])), parent=old)
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT version FROM agentrio.store").fetchall() == [(SCHEMA_VERSION,)] == [(5,)]
    async with PostgresStore(dsn) as store:
        *before, new = await store.list_sessions()
    # The old rows as they were, without the fields they never had.
    assert before == [SessionInfo("old", 1.0), SessionInfo("fork", 2.0, "old", 4)]
    assert (new.session_id, new.agent_name, new.spawned_by) == (child.session_id, "child", "old")


async def test_records_from_before_checksums_get_them_and_damage_is_found(dsn):
    options = {"schema": "agentrio", "holder": "test", "lease_seconds": 1.0, "create": True}
    Database(dsn, **options, migrations=MIGRATIONS[:2]).close()
    records = tool_turns(2)
    state = SessionState.replay(records)
    with psycopg.connect(dsn) as conn:
        conn.execute("INSERT INTO agentrio.sessions VALUES ('old', 1.0, NULL, 0, 'a', NULL)")
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO agentrio.records VALUES ('old', %s, %s, 2.0, %s)",
                [(seq, r.type, encode_record(r)) for seq, r in enumerate(records, 1)],
            )
        conn.execute(
            "INSERT INTO agentrio.snapshots VALUES ('old', %s, %s, %s)",
            (len(records), state.message_records, encode_state(state)),
        )
    async with PostgresStore(dsn) as store:
        assert (await store.load_session("old"))[1] == records  # checksums made, and they hold
        assert (await store.load_state("old")).state.messages == state.messages
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM agentrio.records WHERE checksum IS NULL").fetchone() == (0,)
        # One stored message changed behind the store's back.
        conn.execute(
            "UPDATE agentrio.records SET data = replace(data, 'prompt 1', 'pay 900 EUR') WHERE seq = 5"
        )
        conn.execute("UPDATE agentrio.snapshots SET state = state || ' '")
    async with PostgresStore(dsn) as store:
        with pytest.raises(StoreCorrupt, match="session 'old': record 5 is damaged"):
            await store.load_session("old")
        with pytest.raises(StoreCorrupt, match="session 'old': its snapshot is damaged"):
            await store.load_state("old")
