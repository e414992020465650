"""The blocking half of the SQLite store: one connection to the file, used
from the store's own thread."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import attrs

from ...messages import Message
from ..codec import decode_message_record, decode_record, decode_state
from ..projection import SessionState
from ..records import MessageAppended, Record
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
from .schema import MIGRATIONS, check_identity, migrate

T = TypeVar("T")

#: A row of the records table: ``(session_id, seq, kind, written_at, JSON)``.
RecordRow = tuple[str, int, str, float, str]
#: session id, the seq of the last record it covers, its message count, the
#: encoded state without its history.
SnapshotRow = tuple[str, int, int, str]

MESSAGE = MessageAppended.type


@attrs.define
class Batch:
    """What one write transaction commits."""

    records: list[RecordRow] = attrs.Factory(list)
    snapshots: list[SnapshotRow] = attrs.Factory(list)

    def __bool__(self) -> bool:
        return bool(self.records or self.snapshots)


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
    ) -> None:
        self.path = path
        with translated(path):
            self._conn = connect(path, create=create)
            try:
                # Refuse a foreign or newer file before writing anything to it.
                with transaction(self._conn, "DEFERRED"):
                    version = check_identity(self._conn, path, migrations)
                configure(self._conn, path, synchronous)
                if version < len(migrations):
                    migrate(self._conn, path, migrations)
            except BaseException:
                self._conn.close()
                raise

    def close(self) -> None:
        with translated(self.path):
            self._conn.close()

    # -- writing --------------------------------------------------------------

    def create_session(self, info: SessionInfo, rows: Sequence[RecordRow]) -> None:
        conn = self._conn
        with translated(self.path), transaction(conn, "IMMEDIATE"):
            try:
                conn.execute(
                    "INSERT INTO sessions VALUES (?, ?, ?, ?)",
                    (info.session_id, info.created_at, info.parent_session_id, info.seed_length),
                )
            except sqlite3.IntegrityError:
                raise SessionExists(f"session {info.session_id!r} already exists in {self.path}") from None
            conn.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?)", rows)

    def write(self, batch: Batch) -> None:
        conn = self._conn
        with translated(self.path), transaction(conn, "IMMEDIATE"):
            try:
                conn.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?)", batch.records)
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"{self.path}: {exc}: a session is written by two stores at once") from exc
            conn.executemany("INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?)", batch.snapshots)

    def delete_session(self, session_id: str) -> None:
        conn = self._conn
        with translated(self.path), transaction(conn, "IMMEDIATE"):
            self._info(session_id)  # SessionNotFound
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
                "SELECT seq, message_count, state FROM snapshots WHERE session_id = ?", (session_id,)
            ).fetchone()
            after, message_count, state_text = snapshot or (0, 0, None)
            # History reaches to the first ``message_count`` message records
            # (the snapshot knows how many of them a compaction replaced).
            history_rows = conn.execute(
                "SELECT seq, data FROM records WHERE session_id = ? AND kind = ? AND seq <= ? "
                "ORDER BY seq LIMIT ?",
                (session_id, MESSAGE, after, message_count),
            ).fetchall()
            rows = self._records(session_id, after)
        if state_text is None:
            state = SessionState()
        else:
            history = self._history(session_id, history_rows, message_count)
            state = self._decoded(session_id, "its snapshot", decode_state, state_text, history)
        last_seq = after
        for last_seq, record in self._decode(session_id, rows, after):
            state.apply(record)
        return LoadedSession(info, state, len(rows)), last_seq

    def load_records(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        conn = self._conn
        with translated(self.path), transaction(conn, "DEFERRED"):
            info = self._info(session_id)
            rows = self._records(session_id, 0)
        return info, [record for _, record in self._decode(session_id, rows, 0)]

    def summaries(self) -> list[SessionSummary]:
        with translated(self.path):
            rows = self._conn.execute(
                "SELECT session_id, created_at, parent_session_id, seed_length, "
                "  COALESCE(SUM(kind = ?), 0), COALESCE(MAX(written_at), created_at) "
                "FROM sessions LEFT JOIN records USING (session_id) "
                "GROUP BY session_id ORDER BY created_at, session_id",
                (MESSAGE,),
            ).fetchall()
        return [SessionSummary(SessionInfo(*row[:4]), row[4], row[5]) for row in rows]

    def _info(self, session_id: str) -> SessionInfo:
        row = self._conn.execute(
            "SELECT created_at, parent_session_id, seed_length FROM sessions WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return SessionInfo(session_id, *row)

    def _records(self, session_id: str, after: int) -> list[tuple[int, str]]:
        return self._conn.execute(
            "SELECT seq, data FROM records WHERE session_id = ? AND seq > ? ORDER BY seq", (session_id, after)
        ).fetchall()

    # -- decoding -------------------------------------------------------------

    def _decoded(self, session_id: str, what: str, decode: Callable[..., T], *args: Any) -> T:
        try:
            return decode(*args)
        except Exception as exc:
            raise StoreCorrupt(f"{self.path}: session {session_id!r}: {what} cannot be read: {exc}") from exc

    def _decode(
        self, session_id: str, rows: list[tuple[int, str]], after: int
    ) -> Iterator[tuple[int, Record]]:
        for expected, (seq, data) in enumerate(rows, after + 1):
            if seq != expected:
                raise StoreCorrupt(f"{self.path}: session {session_id!r}: record {expected} is missing")
            yield seq, self._decoded(session_id, f"record {seq}", decode_record, data)

    def _history(self, session_id: str, rows: list[tuple[int, str]], count: int) -> list[Message]:
        if len(rows) != count:
            raise StoreCorrupt(f"{self.path}: session {session_id!r}: its snapshot's history is incomplete")
        return [self._decoded(session_id, f"record {seq}", decode_message_record, data) for seq, data in rows]
