"""The blocking half of the SQLite store: one connection to the file, used
from the store's own thread."""

from __future__ import annotations

import functools
import itertools
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import attrs

from ..blobs import refers_to_blobs, restore
from ..checksum import record_checksum, snapshot_checksum
from ..records import MessageAppended, Record
from ..rows import SESSION_COLUMNS, RecordRow, RowDecoder, session_row
from ..store import (
    LoadedSession,
    SessionExists,
    SessionInfo,
    SessionNotFound,
    SessionSummary,
    StoreCorrupt,
    StoreError,
)
from .connection import Synchronous, configure, connect, store_error, transaction
from .schema import MIGRATIONS, check_identity, create_file, migrate

#: session id, the seq of the last record it covers, its message count, the
#: encoded state without its history, its checksum.
SnapshotRow = tuple[str, int, int, str, int]
#: A record as read back: its seq, kind, JSON bytes and stored checksum.
StoredRecord = tuple[int, str, bytes, int | None]

MESSAGE = MessageAppended.type
#: The columns of a ``StoredRecord``: the JSON as the bytes stored, which
#: the checksum covers (and which need not be valid UTF-8 any more).
_STORED = "seq, kind, CAST(data AS BLOB), checksum"


@attrs.define
class Batch:
    """What one write transaction commits."""

    records: list[RecordRow] = attrs.Factory(list)
    snapshots: list[SnapshotRow] = attrs.Factory(list)
    #: The blobs the records refer to (see ``journal.blobs``), by key.
    blobs: dict[str, bytes] = attrs.Factory(dict)

    def __bool__(self) -> bool:
        return bool(self.records or self.snapshots)


#: A checkpoint (moving the WAL's pages into the database file, with an
#: fsync) is due after this many commits or bytes of records since the last
#: one: about what SQLite's automatic checkpoint of 1,000 pages allows.
CHECKPOINT_COMMITS = 250
CHECKPOINT_BYTES = 2_000_000


#: The most records ``try_write`` inserts with one statement; its SQL is
#: kept for each count up to it (sqlite3 caches 128 statements), and six
#: values a record stay far below SQLite's limit on a statement's values.
_ROWS_PER_INSERT = 64


@functools.cache
def _insert_rows(count: int) -> str:
    """The statement that inserts ``count`` records."""
    return "INSERT INTO records VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?)"] * count)


_INSERT_ONE = _insert_rows(1)
#: A blob already there is the same bytes (its key is their hash).
_INSERT_BLOB = "INSERT OR IGNORE INTO blobs VALUES (?, ?)"


@contextmanager
def translated(path: Path) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise store_error(path, exc) from exc


class Database:
    def __init__(
        self,
        path: Path,
        *,
        create: bool,
        synchronous: Synchronous,
        migrations: Sequence[tuple[str, ...]] = MIGRATIONS,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self._rows = _CheckedRows(str(path), self._blob)
        # Commits and record bytes since the last checkpoint.
        self._commits = 0
        self._bytes = 0
        #: The trio thread's connection; none when read-only.
        self._here: sqlite3.Connection | None = None
        with translated(path):
            if create:
                create_file(path)
            self._conn = connect(path, read_only=read_only)
            try:
                # Refuse a foreign or newer file before writing anything to it.
                with transaction(self._conn, "DEFERRED"):
                    version = check_identity(self._conn, path, migrations)
                if read_only:
                    if version < len(migrations):
                        raise StoreError(
                            f"{path} has store schema version {version}, older than the {len(migrations)} "
                            "this version of agentrio reads, and it is opened read-only: open it once "
                            "where it can be written (agentrio run, say) to upgrade it"
                        )
                    return  # nothing to configure: WAL mode is the file's already
                configure(self._conn, path, synchronous)
                if version < len(migrations):
                    migrate(self._conn, path, migrations)
                # The trio thread's commits (``try_write``): on a connection of
                # their own that never waits for a lock, rather than turning
                # the busy timeout off and on around each.
                self._here = connect(path, busy_timeout_ms=0)
                try:
                    configure(self._here, path, synchronous)
                except BaseException:
                    self._here.close()
                    raise
            except BaseException:
                self._conn.close()
                raise

    def close(self) -> None:
        with translated(self.path):
            try:
                if self._here is not None:
                    self._here.close()
            finally:
                self._conn.close()

    # -- writing --------------------------------------------------------------

    def create_session(
        self, info: SessionInfo, rows: Sequence[RecordRow], blobs: Mapping[str, bytes] | None = None
    ) -> None:
        conn = self._conn
        with translated(self.path), transaction(conn, "IMMEDIATE"):
            if blobs:
                conn.executemany(_INSERT_BLOB, blobs.items())
            try:
                conn.execute(
                    f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", session_row(info)
                )
            except sqlite3.IntegrityError:
                raise SessionExists(f"session {info.session_id!r} already exists in {self.path}") from None
            conn.executemany(_INSERT_ONE, rows)

    def write(self, batch: Batch) -> None:
        """Commit ``batch``, waiting for another process's write to end, then
        checkpoint if one is due. In the store's thread."""
        with translated(self.path):
            self._commit(self._conn, batch)
        if self.checkpoint_due:
            self.checkpoint()

    def try_write(self, batch: Batch) -> bool:
        """Commit ``batch`` unless another connection holds the write lock,
        without waiting for it: ``False`` when nothing was written. Never a
        checkpoint (see ``checkpoint_due``). With ``synchronous=NORMAL``
        a commit writes to the OS's cache without syncing, so this may run
        in the trio thread while the store's thread is idle.

        Records alone go in one INSERT, which is a transaction of its own:
        no BEGIN and COMMIT around it. It may fail for a lock where BEGIN
        IMMEDIATE would not (another process committed since the statement
        began reading): then nothing was written, as for any lock here, and
        the store's thread commits the batch with ``write``."""
        conn = self._here
        assert conn is not None  # a store that commits here opened this connection
        rows = batch.records
        # Every barrier of an agent lands here: the errors are told as in
        # ``translated`` and ``_one_writer``, without their context managers.
        try:
            if batch.snapshots or batch.blobs or len(rows) > _ROWS_PER_INSERT:
                self._commit(conn, batch)
            else:
                conn.execute(_insert_rows(len(rows)), tuple(itertools.chain.from_iterable(rows)))
        except sqlite3.IntegrityError as exc:
            raise self._written_twice(exc) from exc
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY and not conn.in_transaction:
                return False
            raise store_error(self.path, exc) from exc
        except sqlite3.Error as exc:
            raise store_error(self.path, exc) from exc
        self._count(batch)
        return True

    def _commit(self, conn: sqlite3.Connection, batch: Batch) -> None:
        with transaction(conn, "IMMEDIATE"):
            if batch.blobs:
                conn.executemany(_INSERT_BLOB, batch.blobs.items())
            with self._one_writer():
                conn.executemany(_INSERT_ONE, batch.records)
            if batch.snapshots:
                conn.executemany("INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?, ?)", batch.snapshots)
        self._count(batch)

    @contextmanager
    def _one_writer(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError as exc:
            raise self._written_twice(exc) from exc

    def _written_twice(self, exc: sqlite3.IntegrityError) -> StoreError:
        """A record that is already there was written by another store."""
        return StoreError(f"{self.path}: {exc}: a session is written by two stores at once")

    def _count(self, batch: Batch) -> None:
        self._commits += 1
        size = 0
        for row in batch.records:
            size += len(row[4])
        for snapshot in batch.snapshots:
            size += len(snapshot[3])
        self._bytes += size

    @property
    def checkpoint_due(self) -> bool:
        return self._commits >= CHECKPOINT_COMMITS or self._bytes >= CHECKPOINT_BYTES

    def checkpoint(self) -> None:
        """Copy what the WAL holds into the database file, as far as readers
        allow. In the store's thread: it syncs the file."""
        with translated(self.path):
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        self._commits = self._bytes = 0

    def delete_session(self, session_id: str) -> None:
        conn = self._conn
        with translated(self.path), transaction(conn, "IMMEDIATE"):
            try:
                self._info(session_id)  # SessionNotFound
            except StoreCorrupt:
                pass  # records left without their session row go too
            for table in ("records", "snapshots", "sessions"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))

    # -- reading --------------------------------------------------------------

    def load_state(self, session_id: str) -> tuple[LoadedSession, int]:
        """The session and its last sequence number."""
        conn = self._conn
        # Read in one transaction, decoded after it.
        with translated(self.path), transaction(conn, "DEFERRED"):
            info = self._info(session_id)
            snapshot = conn.execute(
                "SELECT seq, message_count, CAST(state AS BLOB), checksum FROM snapshots "
                "WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            after, message_count, state_data, state_checksum = snapshot or (0, 0, None, None)
            # History reaches to the first ``message_count`` message records
            # (the snapshot knows how many of them a compaction replaced).
            history_rows = conn.execute(
                f"SELECT {_STORED} FROM records WHERE session_id = ? AND kind = ? AND seq <= ? "
                "ORDER BY seq LIMIT ?",
                (session_id, MESSAGE, after, message_count),
            ).fetchall()
            rows = self._records(session_id, after)
        if snapshot is not None:
            if snapshot_checksum(session_id, after, message_count, cast(bytes, state_data)) != state_checksum:
                raise StoreCorrupt(f"{self.path}: session {session_id!r}: its snapshot is damaged")
            snapshot = (after, message_count, state_data)
        return self._rows.session(info, snapshot, history_rows, rows)

    def load_records(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        conn = self._conn
        with translated(self.path), transaction(conn, "DEFERRED"):
            info = self._info(session_id)
            rows = self._records(session_id, 0)
        return info, self._rows.all_records(session_id, rows)

    def summaries(self) -> list[SessionSummary]:
        with translated(self.path):
            rows = self._conn.execute(
                f"SELECT {SESSION_COLUMNS}, "
                "  COALESCE(SUM(kind = ?), 0), COALESCE(MAX(written_at), created_at) "
                "FROM sessions LEFT JOIN records USING (session_id) "
                "GROUP BY session_id ORDER BY created_at, session_id",
                (MESSAGE,),
            ).fetchall()
        return [SessionSummary(SessionInfo(*row[:-2]), row[-2], row[-1]) for row in rows]

    def _info(self, session_id: str) -> SessionInfo:
        row = self._conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            # Never created, unless what the session wrote is still there.
            orphans = self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM records WHERE session_id = ?) "
                "OR EXISTS (SELECT 1 FROM snapshots WHERE session_id = ?)",
                (session_id, session_id),
            ).fetchone()[0]
            if orphans:
                raise StoreCorrupt(f"{self.path}: session {session_id!r} has records but no session row")
            raise SessionNotFound(session_id)
        return SessionInfo(*row)

    def _blob(self, key: str) -> bytes | None:
        row = self._conn.execute("SELECT data FROM blobs WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _records(self, session_id: str, after: int) -> list[StoredRecord]:
        return self._conn.execute(
            f"SELECT {_STORED} FROM records WHERE session_id = ? AND seq > ? ORDER BY seq",
            (session_id, after),
        ).fetchall()


class _CheckedRows(RowDecoder):
    """Rows as ``StoredRecord``s: a record's JSON is decoded once its
    checksum shows it undamaged, with the blobs it names put back."""

    def __init__(self, where: str, blob: Callable[[str], bytes | None]) -> None:
        super().__init__(where)
        self._blob = blob

    def data(self, session_id: str, row: StoredRecord) -> bytes:
        seq, kind, data, checksum = row
        if record_checksum(session_id, seq, kind, data) != checksum:
            raise StoreCorrupt(
                f"{self.where}: session {session_id!r}: record {seq} is damaged (checksum mismatch)"
            )
        if refers_to_blobs(data):
            return restore(data, self._blob, f"{self.where}: session {session_id!r}: record {seq}")
        return data
