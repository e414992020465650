"""Where a test keeps its sessions, for the tests and their child processes."""

from __future__ import annotations

import sqlite3

import attrs

from agentrio import SQLiteStore
from agentrio.journal import PostgresStore, Store

#: Leases in the tests, in seconds: short, so that takeovers happen within
#: a test.
LEASE = 2.0

DURABLE = ["sqlite", "postgres"]


@attrs.frozen
class Place:
    """Where a test keeps its sessions: an SQLite file or a PostgreSQL
    database. Calling it makes a new store object on it."""

    kind: str
    #: The file's path, or the database's DSN.
    location: str

    def __call__(self, **options) -> Store:
        if self.kind == "sqlite":
            return SQLiteStore(self.location, **options)
        return PostgresStore(self.location, **{"lease": LEASE, **options})

    def execute(self, statement: str, params=()) -> list[tuple]:
        """Run SQL on the database behind the store's back (in the store's
        schema for PostgreSQL): to tamper with it, or to read it."""
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.location)
            try:
                with conn:
                    return conn.execute(statement, params).fetchall()
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.location, autocommit=True, options="-c search_path=agentrio") as conn:
            cursor = conn.execute(statement.replace("?", "%s"), params)
            return cursor.fetchall() if cursor.description else []

    def stored_records(self, session_id: str) -> list:
        """The session's records as the database holds them, in order."""
        from agentrio.journal.codec import decode_record

        rows = self.execute("SELECT data FROM records WHERE session_id = ? ORDER BY seq", (session_id,))
        return [decode_record(data) for (data,) in rows]
