"""The store's schema: what makes a SQLite file ours, and its migrations."""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from ..store import ForeignDatabase, SchemaTooNew
from .connection import transaction

#: Written to the file header (``PRAGMA application_id``) so that a store is
#: told apart from any other SQLite database. "agtr".
APPLICATION_ID = 0x61677472

#: Migration ``i`` takes the schema from version ``i`` to version ``i + 1``;
#: the version is kept in ``PRAGMA user_version``. Append, never edit.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            created_at REAL NOT NULL,
            parent_session_id TEXT,
            seed_length INTEGER NOT NULL
        )""",
        # One row a record; ``seq`` counts from 1 in each session, ``kind`` is
        # the record's type and ``written_at`` when it was appended.
        """CREATE TABLE records (
            session_id TEXT NOT NULL REFERENCES sessions,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            written_at REAL NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID""",
        # The latest snapshot of each session: its state after record ``seq``
        # without the committed history, which is the first ``message_count``
        # messages of its message records.
        """CREATE TABLE snapshots (
            session_id TEXT PRIMARY KEY REFERENCES sessions,
            seq INTEGER NOT NULL,
            message_count INTEGER NOT NULL,
            state TEXT NOT NULL
        )""",
    ),
    # Checksums (see ``journal.checksum``) of every record and snapshot, so
    # that damage is noticed on reading. Rows written before have theirs
    # computed here: they are taken as they are.
    (
        "ALTER TABLE records ADD COLUMN checksum INTEGER",
        "ALTER TABLE snapshots ADD COLUMN checksum INTEGER",
        "UPDATE records SET checksum = agentrio_record_checksum(session_id, seq, kind, CAST(data AS BLOB))",
        (
            "UPDATE snapshots SET checksum = "
            "agentrio_snapshot_checksum(session_id, seq, message_count, CAST(state AS BLOB))"
        ),
    ),
    # The agent a session was created for, and the session of the agent
    # that spawned it (see ``SessionInfo``); NULL in rows written before.
    (
        "ALTER TABLE sessions ADD COLUMN agent_name TEXT",
        "ALTER TABLE sessions ADD COLUMN spawned_by TEXT",
    ),
    # Records in a rowid table, found by its key's index. Appending to a
    # WITHOUT ROWID table rebalances its last leaves at every split, so a
    # commit of the few records between two barriers wrote five pages to
    # the WAL; rows appended to a rowid table fill its last page, and the
    # index's entries are small: 3.5 pages a commit, and a third less CPU.
    (
        """CREATE TABLE records_by_rowid (
            session_id TEXT NOT NULL REFERENCES sessions,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            written_at REAL NOT NULL,
            data TEXT NOT NULL,
            checksum INTEGER,
            PRIMARY KEY (session_id, seq)
        )""",
        (
            "INSERT INTO records_by_rowid SELECT session_id, seq, kind, written_at, data, checksum FROM records "
            "ORDER BY session_id, seq"
        ),
        "DROP TABLE records",
        "ALTER TABLE records_by_rowid RENAME TO records",
    ),
    # Images and documents, once each, keyed by the SHA-256 of their bytes
    # (see ``journal.blobs``); records name them.
    ("CREATE TABLE blobs (key TEXT PRIMARY KEY, data BLOB NOT NULL)",),
)

SCHEMA_VERSION = len(MIGRATIONS)


def create_file(path: Path) -> None:
    """Make a new store file at ``path`` unless a file is there: one holding
    just the header that names it a store, written under a temporary name
    and linked into place whole. So a store's file is never empty, and an
    empty file is a damaged store, not a new one."""
    if path.exists():
        return
    temp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.new")
    try:
        conn = sqlite3.connect(temp)
        try:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        finally:
            conn.close()
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # another process made it first
        except OSError:
            # No hard links on this file system: a rename, which would
            # replace a store made by another process since the check above.
            if not path.exists():
                os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def check_identity(conn: sqlite3.Connection, path: Path, migrations: Sequence[tuple[str, ...]]) -> int:
    """The schema version of ``conn``'s database; raises unless it is a store
    this code can read, or an empty database (version 0). Call it inside a
    transaction: its reads must see one state of a file that another
    process may be initializing."""
    application_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    if application_id != APPLICATION_ID:
        has_tables = conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None
        if application_id or version or has_tables:
            raise ForeignDatabase(f"{path} is an SQLite database of something else, not an agentrio store")
    if version > len(migrations):
        raise SchemaTooNew(
            f"{path} has store schema version {version}, newer than the {len(migrations)} "
            "this version of agentrio reads: upgrade agentrio to open it"
        )
    return version


def migrate(conn: sqlite3.Connection, path: Path, migrations: Sequence[tuple[str, ...]] = MIGRATIONS) -> None:
    """Bring the schema up to date, in one transaction that holds the write
    lock, so that processes opening the same new file do it once."""
    with transaction(conn, "IMMEDIATE"):
        # Read again under the lock: another process may have migrated.
        version = check_identity(conn, path, migrations)
        for statements in migrations[version:]:
            for statement in statements:
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {len(migrations)}")
