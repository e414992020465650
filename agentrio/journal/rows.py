"""The rows of both database stores. Writing: each record encoded once, its
blobs taken out and checksummed (``record_rows``). Reading: sessions from
the rows, decoded, checked that none is missing, and the state projected
from a snapshot and the records after it. Decoding errors, and rows a store
finds damaged, become ``StoreCorrupt`` naming the store, the session and the
record."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from ..messages import Message
from .blobs import extract
from .checksum import text_checksum
from .codec import (
    decode_message_record,
    decode_record,
    decode_state,
    encode_record,
    many_objects,
    with_history,
)
from .projection import SessionState
from .records import Record
from .store import LoadedSession, SessionInfo, StoreCorrupt

#: A record as a store reads it: its sequence number first, then what
#: ``RowDecoder.data`` takes its JSON from.
Row = tuple[Any, ...]
#: The seq of the last record a snapshot covers, its message count and its
#: encoded state without its history.
Snapshot = tuple[int, int, str | bytes]

#: A row of the records table: ``(session_id, seq, kind, written_at, JSON,
#: checksum)``.
RecordRow = tuple[str, int, str, float, str, int]

#: The columns of the sessions table, in ``SessionInfo``'s order.
SESSION_COLUMNS = "session_id, created_at, parent_session_id, seed_length, agent_name, spawned_by"


def session_row(info: SessionInfo) -> tuple[Any, ...]:
    """``info`` as the values of ``SESSION_COLUMNS``."""
    return (
        info.session_id,
        info.created_at,
        info.parent_session_id,
        info.seed_length,
        info.agent_name,
        info.spawned_by,
    )


def record_rows(
    session_id: str, last_seq: int, records: Sequence[Record], blobs: dict[str, bytes]
) -> list[RecordRow]:
    """The rows of ``records``, numbered after ``last_seq``; the blobs they
    refer to are added to ``blobs``."""
    now = time.time()
    rows = []
    for seq, record in enumerate(records, last_seq + 1):
        data, found = extract(encode_record(record))
        blobs.update(found)
        kind = record.type
        rows.append((session_id, seq, kind, now, data, text_checksum(session_id, seq, kind, data)))
    return rows


class RowDecoder:
    """``where`` names the store in errors. Rows are ``(seq, JSON)``; a
    store whose rows carry more (a checksum) says how to get the JSON out of
    them by overriding ``data``."""

    def __init__(self, where: str) -> None:
        self.where = where

    def data(self, session_id: str, row: Row) -> str | bytes:
        """The record's JSON; raises ``StoreCorrupt`` if the row is damaged."""
        data: str | bytes = row[1]
        return data

    def session(
        self,
        info: SessionInfo,
        snapshot: Snapshot | None,
        history_rows: list[Row],
        rows: list[Row],
    ) -> tuple[LoadedSession, int]:
        """The session restored from its snapshot (``history_rows`` are the
        first message records up to it) and the ``rows`` after it, and its
        last sequence number. The collector waits while it decodes (see
        ``many_objects``)."""
        with many_objects():
            if snapshot is None:
                after, state = 0, SessionState()
            else:
                after, state = snapshot[0], self._snapshot_state(info.session_id, snapshot, history_rows)
            last_seq = after
            for last_seq, record in self.records(info.session_id, rows, after):
                state.apply(record)
        return LoadedSession(info, state, len(rows)), last_seq

    def _snapshot_state(self, session_id: str, snapshot: Snapshot, history_rows: list[Row]) -> SessionState:
        _, message_count, state_text = snapshot
        if len(history_rows) != message_count:
            raise StoreCorrupt(f"{self.where}: session {session_id!r}: its snapshot's history is incomplete")
        try:
            state = decode_state(state_text)
        except Exception as exc:
            raise self._unreadable(session_id, "its snapshot", exc) from exc
        # Messages a compaction replaced are not decoded: the state holds
        # their summary instead.
        return with_history(state, self._messages(session_id, history_rows[state.replaced :]))

    def _messages(self, session_id: str, rows: list[Row]) -> list[Message]:
        # The bulk of a restore: one loop, no call or string per row beyond
        # the decoding.
        data = self.data
        messages: list[Message] = []
        append = messages.append
        for row in rows:
            text = data(session_id, row)
            try:
                append(decode_message_record(text))
            except Exception as exc:
                raise self._unreadable(session_id, f"record {row[0]}", exc) from exc
        return messages

    def all_records(self, session_id: str, rows: list[Row]) -> list[Record]:
        """Every record of a session, ``rows`` from its first, decoded with
        the collector waiting."""
        with many_objects():
            return [record for _, record in self.records(session_id, rows)]

    def records(self, session_id: str, rows: list[Row], after: int = 0) -> Iterator[tuple[int, Record]]:
        data = self.data
        for expected, row in enumerate(rows, after + 1):
            seq = row[0]
            if seq != expected:
                raise StoreCorrupt(f"{self.where}: session {session_id!r}: record {expected} is missing")
            text = data(session_id, row)
            try:
                record = decode_record(text)
            except Exception as exc:
                raise self._unreadable(session_id, f"record {seq}", exc) from exc
            yield seq, record

    def _unreadable(self, session_id: str, what: str, exc: Exception) -> StoreCorrupt:
        return StoreCorrupt(f"{self.where}: session {session_id!r}: {what} cannot be read: {exc}")
