"""Connections as the store uses them: WAL, a busy timeout, explicit
transactions, and SQLite errors told as store errors."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from ..checksum import record_checksum, snapshot_checksum
from ..store import StoreCorrupt, StoreError, StoreNotFound

Synchronous = Literal["NORMAL", "FULL"]

#: How long a writer waits for another process's transaction to end.
BUSY_TIMEOUT_MS = 10_000

_CORRUPTION = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}


def store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    if getattr(exc, "sqlite_errorname", None) in _CORRUPTION:
        return StoreCorrupt(f"{path} is damaged or is not an SQLite database: {exc}")
    return StoreError(f"{path}: {exc}")


def connect(
    path: Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS, read_only: bool = False
) -> sqlite3.Connection:
    """A connection in autocommit mode: transactions are explicit. WAL mode
    and the durability level are set later, once the file is known to be a
    store (setting them writes to the file). ``busy_timeout_ms``: how long
    a statement waits for another connection's lock before it fails.
    ``read_only``: one that never writes to the file nor, where its folder
    cannot be written, beside it (``read_only_uri``).

    A store's file is never empty (``schema.create_file``), so an empty file
    is a store that lost its contents: refused, never a new store."""
    if not path.exists():
        raise StoreNotFound(f"no store at {path}")
    if path.is_file() and path.stat().st_size == 0:
        raise StoreCorrupt(
            f"{path} is damaged: the file is empty (a store truncated to nothing, or an empty file "
            "made for one); remove it to start a new store there"
        )
    # Made in the store's thread; ``Database.try_write``'s is used in the
    # trio thread.
    target, uri = (read_only_uri(path), True) if read_only else (path, False)
    conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, uri=uri)
    conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
    # For the migration that adds checksums to rows written before them.
    conn.create_function("agentrio_record_checksum", 4, record_checksum, deterministic=True)
    conn.create_function("agentrio_snapshot_checksum", 4, snapshot_checksum, deterministic=True)
    return conn


def read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` for reading only. A WAL reader needs the
    ``-shm`` file beside the database, which SQLite makes if it is missing;
    where the folder cannot be written and no ``-wal`` file is there, no
    writer can be at work either (a writer needs both files), so the file is
    opened as immutable, needing neither. A ``-wal`` left there (a writer that
    did not close) is read through its ``-shm``, which must be there too."""
    folder = path.absolute().parent
    wal = path.with_name(f"{path.name}-wal")
    immutable = not os.access(folder, os.W_OK) and not wal.exists()
    return f"{path.absolute().as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")


def configure(conn: sqlite3.Connection, path: Path, synchronous: Synchronous) -> None:
    # Turning a new file to WAL needs it to itself, and SQLite does not wait
    # for that: another process opening the same new file may be reading it.
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            break
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorname != "SQLITE_BUSY" or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    if mode != "wal":
        raise StoreError(f"{path}: SQLite cannot use write-ahead logging here (journal mode {mode!r})")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    # A checkpoint syncs the file: the store runs its own, in its thread.
    conn.execute("PRAGMA wal_autocheckpoint = 0")


@contextmanager
def transaction(conn: sqlite3.Connection, mode: Literal["DEFERRED", "IMMEDIATE"]) -> Iterator[None]:
    """``IMMEDIATE`` takes the write lock at once (waiting up to the busy
    timeout), so a write transaction never fails half-way on a lock."""
    conn.execute(f"BEGIN {mode}")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
