"""The store's schema: its tables live in a PostgreSQL schema of their own
(``agentrio`` unless told otherwise), marked as ours by the row of its
``store`` table, which also holds the version."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import psycopg

from ..checksum import snapshot_checksum, text_checksum
from ..store import ForeignDatabase, SchemaTooNew
from .connection import one

APPLICATION = "agentrio"

#: Serializes migrations of one database across processes (a transaction
#: lock: it ends with the transaction). "agtr".
MIGRATION_LOCK = 0x61677472


def _checksum_rows(conn: psycopg.Connection) -> None:
    """Checksums for the rows written before records had them, computed as
    the store computes them (PostgreSQL has no CRC-32)."""
    conn.execute(
        "CREATE TEMPORARY TABLE checksums (session_id text, seq bigint, checksum bigint) ON COMMIT DROP"
    )
    with conn.cursor(name="agentrio_rows") as rows, conn.cursor() as out:
        rows.execute("SELECT session_id, seq, kind, data FROM records")
        while chunk := rows.fetchmany(5000):
            with out.copy("COPY checksums FROM STDIN") as copy:
                for session_id, seq, kind, data in chunk:
                    copy.write_row((session_id, seq, text_checksum(session_id, seq, kind, data)))
    conn.execute(
        "UPDATE records SET checksum = c.checksum FROM checksums c "
        "WHERE records.session_id = c.session_id AND records.seq = c.seq"
    )
    snapshots = conn.execute("SELECT session_id, seq, message_count, state FROM snapshots").fetchall()
    with conn.cursor() as cursor:
        cursor.executemany(
            "UPDATE snapshots SET checksum = %s WHERE session_id = %s",
            [(snapshot_checksum(s, seq, n, state.encode()), s) for s, seq, n, state in snapshots],
        )


#: A step of a migration: a statement, or a function that runs them.
Step = str | Callable[[psycopg.Connection], None]

#: Migration ``i`` takes the schema from version ``i`` to version ``i + 1``.
#: Append, never edit.
MIGRATIONS: tuple[tuple[Step, ...], ...] = (
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
    # A checksum with every record and snapshot, as in the SQLite store
    # (``checksum``): damage is found when the row is read.
    (
        "ALTER TABLE records ADD COLUMN checksum bigint",
        "ALTER TABLE snapshots ADD COLUMN checksum bigint",
        _checksum_rows,
        "ALTER TABLE records ALTER COLUMN checksum SET NOT NULL",
        "ALTER TABLE snapshots ALTER COLUMN checksum SET NOT NULL",
    ),
    # Images and documents, once each, keyed by the SHA-256 of their bytes
    # (see ``journal.blobs``); records name them.
    ("CREATE TABLE blobs (key text PRIMARY KEY, data bytea NOT NULL)",),
    # No foreign key from records to sessions: its check ran a query and
    # locked the session's row for each record written. A record is only
    # written with its session's lease, whose row references the session,
    # and a session is deleted with its records, in one transaction.
    ("ALTER TABLE records DROP CONSTRAINT records_session_id_fkey",),
)

SCHEMA_VERSION = len(MIGRATIONS)


def check_identity(
    conn: psycopg.Connection, where: str, schema: str, migrations: Sequence[tuple[Step, ...]]
) -> int:
    """The version of the store in ``schema``: 0 when there is none yet;
    raises unless it is a store this code can read."""
    if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is None:
        return 0
    marked = one(conn.execute("SELECT to_regclass(format('%%I.store', %s::text))", (schema,)))[0]
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
    version: int = row[1]
    if version > len(migrations):
        raise SchemaTooNew(
            f"{where} has store schema version {version}, newer than the {len(migrations)} "
            "this version of agentrio reads: upgrade agentrio to open it"
        )
    return version


def migrate(
    conn: psycopg.Connection, where: str, schema: str, migrations: Sequence[tuple[Step, ...]]
) -> None:
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
        for steps in migrations[version:]:
            for step in steps:
                if isinstance(step, str):
                    conn.execute(step)
                else:
                    step(conn)
        conn.execute("UPDATE store SET version = %s", (len(migrations),))
