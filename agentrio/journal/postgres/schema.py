"""The store's schema: its tables live in a PostgreSQL schema of their own
(``agentrio`` unless told otherwise), marked as ours by the row of its
``store`` table, which also holds the version."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from ..store import ForeignDatabase, SchemaTooNew

APPLICATION = "agentrio"

#: Serializes migrations of one database across processes (a transaction
#: lock: it ends with the transaction). "agtr".
MIGRATION_LOCK = 0x61677472

#: Migration ``i`` takes the schema from version ``i`` to version ``i + 1``.
#: Append, never edit.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE sessions (
            session_id text PRIMARY KEY,
            created_at double precision NOT NULL,
            parent_session_id text,
            seed_length integer NOT NULL
        )""",
        # As in the SQLite store: ``seq`` counts from 1 in each session.
        """CREATE TABLE records (
            session_id text NOT NULL REFERENCES sessions,
            seq bigint NOT NULL,
            kind text NOT NULL,
            written_at double precision NOT NULL,
            data text NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
        """CREATE TABLE snapshots (
            session_id text PRIMARY KEY REFERENCES sessions,
            seq bigint NOT NULL,
            message_count integer NOT NULL,
            state text NOT NULL
        )""",
        # Who may write each session. ``token`` only ever grows (a takeover
        # increments it), so a row is never deleted; a released lease has no
        # holder.
        """CREATE TABLE leases (
            session_id text PRIMARY KEY REFERENCES sessions,
            holder text,
            token bigint NOT NULL,
            expires_at timestamptz NOT NULL
        )""",
        # Input posted for a session by any store, until its holder takes it:
        # the deletion commits with the records that take it in.
        """CREATE TABLE inputs (
            id bigserial PRIMARY KEY,
            session_id text NOT NULL REFERENCES sessions,
            posted_at double precision NOT NULL,
            data text NOT NULL
        )""",
        "CREATE INDEX inputs_by_session ON inputs (session_id, id)",
    ),
    # The agent a session was created for, and the session of the agent
    # that spawned it (see ``SessionInfo``); NULL in rows written before.
    (
        "ALTER TABLE sessions ADD COLUMN agent_name text",
        "ALTER TABLE sessions ADD COLUMN spawned_by text",
    ),
    # Images and documents, once each, keyed by the SHA-256 of their bytes
    # (see ``journal.blobs``); records name them.
    ("CREATE TABLE blobs (key text PRIMARY KEY, data bytea NOT NULL)",),
)

SCHEMA_VERSION = len(MIGRATIONS)


def check_identity(
    conn: psycopg.Connection, where: str, schema: str, migrations: Sequence[tuple[str, ...]]
) -> int:
    """The version of the store in ``schema``: 0 when there is none yet;
    raises unless it is a store this code can read."""
    if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is None:
        return 0
    marked = conn.execute("SELECT to_regclass(format('%%I.store', %s::text))", (schema,)).fetchone()[0]
    if marked is None:
        if (
            conn.execute(
                "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s LIMIT 1",
                (schema,),
            ).fetchone()
            is not None
        ):
            raise ForeignDatabase(
                f"{where}: schema {schema!r} belongs to something else, not an agentrio store"
            )
        return 0
    row = conn.execute("SELECT application, version FROM store").fetchone()
    if row is None or row[0] != APPLICATION:
        raise ForeignDatabase(f"{where}: schema {schema!r} belongs to something else, not an agentrio store")
    version = row[1]
    if version > len(migrations):
        raise SchemaTooNew(
            f"{where} has store schema version {version}, newer than the {len(migrations)} "
            "this version of agentrio reads: upgrade agentrio to open it"
        )
    return version


def migrate(conn: psycopg.Connection, where: str, schema: str, migrations: Sequence[tuple[str, ...]]) -> None:
    """Bring the schema up to date in one transaction, under a lock that
    makes processes opening the same new database do it once."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        version = check_identity(conn, where, schema, migrations)  # another may have migrated
        if version == 0:
            conn.execute(
                psycopg.sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(psycopg.sql.Identifier(schema))
            )
            conn.execute("CREATE TABLE store (application text NOT NULL, version integer NOT NULL)")
            conn.execute("INSERT INTO store VALUES (%s, 0)", (APPLICATION,))
        for statements in migrations[version:]:
            for statement in statements:
                conn.execute(statement)
        conn.execute("UPDATE store SET version = %s", (len(migrations),))
