"""The blocking half of the SQLite store: one connection to the file, used
by one thread at a time, off the trio thread."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import attrs

from ...messages import Message
from ..codec import decode_messages, decode_record, decode_state, encode_messages, encode_state
from ..projection import SessionState
from ..records import Record
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


@attrs.define
class SessionCursor:
    """Where a session's journal stands: the last sequence number given out,
    and how many of its messages the history chunks hold."""

    last_seq: int
    chunked: int


@attrs.frozen
class PendingSnapshot:
    session_id: str
    #: The state after this record.
    seq: int
    state: SessionState
    #: The first message that is not in a history chunk yet.
    chunk_start: int


@attrs.define
class Batch:
    """What one write transaction commits."""

    #: ``(session_id, seq, JSON)``.
    records: list[tuple[str, int, str]] = attrs.Factory(list)
    snapshots: list[PendingSnapshot] = attrs.Factory(list)
    #: Messages appended, by session: every session the batch touches.
    new_messages: dict[str, int] = attrs.Factory(dict)

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
                check_identity(self._conn, path, migrations)
                configure(self._conn, synchronous)
                migrate(self._conn, path, migrations)
            except BaseException:
                self._conn.close()
                raise

    def close(self) -> None:
        with translated(self.path):
            self._conn.close()

    # -- writing --------------------------------------------------------------

    def create_session(self, info: SessionInfo, rows: Sequence[str], messages: int) -> None:
        conn = self._conn
        with translated(self.path), transaction(conn, "IMMEDIATE"):
            try:
                conn.execute(
                    "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        info.session_id,
                        info.created_at,
                        info.parent_session_id,
                        info.seed_length,
                        messages,
                        info.created_at,
                    ),
                )
            except sqlite3.IntegrityError:
                raise SessionExists(f"session {info.session_id!r} already exists in {self.path}") from None
            conn.executemany(
                "INSERT INTO records VALUES (?, ?, ?)",
                [(info.session_id, seq, row) for seq, row in enumerate(rows, 1)],
            )

    def write(self, batch: Batch) -> None:
        # Encoded before the transaction, so the write lock is held briefly.
        snapshots = [
            (
                s.session_id,
                s.seq,
                len(s.state.messages),
                encode_state(s.state),
                s.chunk_start,
                encode_messages(s.state.messages[s.chunk_start :]),
            )
            for s in batch.snapshots
        ]
        now = time.time()
        conn = self._conn
        with translated(self.path), transaction(conn, "IMMEDIATE"):
            try:
                conn.executemany("INSERT INTO records VALUES (?, ?, ?)", batch.records)
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"{self.path}: {exc}: a session is written by two stores at once") from exc
            for session_id, seq, count, state, chunk_start, chunk in snapshots:
                if count > chunk_start:
                    conn.execute(
                        "INSERT INTO history_chunks VALUES (?, ?, ?)", (session_id, chunk_start, chunk)
                    )
                conn.execute(
                    "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?)", (session_id, seq, count, state)
                )
            conn.executemany(
                "UPDATE sessions SET message_count = message_count + ?, updated_at = ? WHERE session_id = ?",
                [(count, now, session_id) for session_id, count in batch.new_messages.items()],
            )

    # -- reading --------------------------------------------------------------

    def load_state(self, session_id: str) -> tuple[LoadedSession, SessionCursor]:
        conn = self._conn
        # Read in one transaction, decoded after it.
        with translated(self.path), transaction(conn, "DEFERRED"):
            info = self._info(session_id)
            snapshot = conn.execute(
                "SELECT seq, message_count, state FROM snapshots WHERE session_id = ?", (session_id,)
            ).fetchone()
            after, chunked, state_text = snapshot or (0, 0, None)
            chunks = conn.execute(
                "SELECT start, messages FROM history_chunks WHERE session_id = ? ORDER BY start",
                (session_id,),
            ).fetchall()
            rows = self._records(session_id, after)
        if state_text is None:
            state = SessionState()
        else:
            history = self._history(session_id, chunks, chunked)
            state = self._decoded(session_id, "its snapshot", decode_state, state_text, history)
        last_seq = after
        for last_seq, record in self._decode(session_id, rows, after):
            state.apply(record)
        return LoadedSession(info, state, len(rows)), SessionCursor(last_seq, chunked)

    def load_records(self, session_id: str) -> tuple[SessionInfo, list[Record], SessionCursor]:
        conn = self._conn
        with translated(self.path), transaction(conn, "DEFERRED"):
            info = self._info(session_id)
            snapshot = conn.execute(
                "SELECT message_count FROM snapshots WHERE session_id = ?", (session_id,)
            ).fetchone()
            rows = self._records(session_id, 0)
        records = [record for _, record in self._decode(session_id, rows, 0)]
        return info, records, SessionCursor(len(records), snapshot[0] if snapshot else 0)

    def summaries(self) -> list[SessionSummary]:
        with translated(self.path):
            rows = self._conn.execute(
                "SELECT session_id, created_at, parent_session_id, seed_length, message_count, updated_at "
                "FROM sessions ORDER BY created_at, session_id"
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

    def _history(self, session_id: str, chunks: list[tuple[int, str]], count: int) -> list[Message]:
        messages: list[Message] = []
        for start, text in chunks:
            if start != len(messages):
                break
            messages += self._decoded(session_id, f"history from message {start}", decode_messages, text)
        if len(messages) != count:
            raise StoreCorrupt(f"{self.path}: session {session_id!r}: its snapshot's history is incomplete")
        return messages
