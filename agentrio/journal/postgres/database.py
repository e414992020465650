"""The blocking half of the PostgreSQL store: one connection, used from the
store's own thread, or for a commit from the trio thread while the store's
thread leaves it alone (``write_here``)."""

from __future__ import annotations

import functools
import itertools
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal, TypeVar

import attrs
import psycopg
from psycopg import errors, sql
from psycopg.types.numeric import Int8Dumper

from ..blobs import refers_to_blobs, restore
from ..checksum import snapshot_checksum, text_checksum
from ..ownership import LeaseHeld
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
    StoreNotFound,
    StoreUnavailable,
)
from .connection import bound_statements, connect, describe, lost, one, redacted, unavailable
from .listener import Listener
from .schema import MIGRATIONS, Step, check_identity, migrate
from .statements import Param, Statements

T = TypeVar("T")

#: A connection idle this long (seconds) is checked before it is used again.
IDLE_CHECK = 1.0

#: session id, the seq of the last record it covers, its message count, the
#: encoded state without its history, its checksum.
SnapshotRow = tuple[str, int, int, str, int]
#: A held session and its fencing token.
Held = tuple[str, int]
#: PostgreSQL's ``synchronous_commit``: whether a commit waits for its WAL
#: to be flushed to the server's disk.
SynchronousCommit = Literal["on", "off"]

MESSAGE = MessageAppended.type
#: A record as read back: its seq, kind, JSON and stored checksum.
StoredRecord = tuple[int, str, str, int]
_STORED = "seq, kind, data, checksum"

_RENEW = """
    UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => %s)
    FROM unnest(%s::text[], %s::bigint[]) AS held(session_id, token)
    WHERE leases.session_id = held.session_id AND leases.token = held.token AND leases.holder = %s
    RETURNING leases.session_id
"""


# Lease check, records, snapshots, inputs taken in and notifications, for
# the sessions whose lease (holder and token) is still the store's, in one
# statement of the parts a batch needs. The rows come as ``VALUES`` lists of
# plain parameters (``_relation``): text arrays would have every JSON quote
# escaped, in Python, on each commit. A batch of one session (an agent's
# barrier) has a statement of its own: no join of its rows with the held
# leases, fewer plan nodes for the server to set up at each commit.
_HELD = """
WITH held AS (
    UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => %s)
    FROM unnest(%s::text[], %s::bigint[]) AS h(session_id, token)
    WHERE leases.session_id = h.session_id AND leases.token = h.token AND leases.holder = %s
    RETURNING leases.session_id
)"""
_HELD_ONE = """
WITH held AS (
    UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => %s)
    WHERE session_id = %s AND token = %s AND holder = %s
    RETURNING session_id
)"""
#: The rows of the sessions held, of each part (``{}``: its alias).
_OF_HELD = "{}.session_id IN (SELECT session_id FROM held)"
#: The rows of the one session, if it is held.
_OF_HELD_ONE = "EXISTS (SELECT FROM held)"
_RECORDS = """, written AS (
    INSERT INTO records
    SELECT * FROM ({}) AS r(session_id, seq, kind, written_at, data, checksum)
    WHERE {}
)"""
_SNAPSHOTS = """, snapshotted AS (
    INSERT INTO snapshots
    SELECT * FROM ({}) AS s(session_id, seq, message_count, state, checksum)
    WHERE {}
    ON CONFLICT (session_id) DO UPDATE
    SET seq = excluded.seq, message_count = excluded.message_count, state = excluded.state,
        checksum = excluded.checksum
)"""
_CONSUMED = """, consumed AS (
    DELETE FROM inputs USING ({}) AS c(session_id, id)
    WHERE inputs.id = c.id AND inputs.session_id = c.session_id AND {}
)"""
_HELD_SESSIONS = "\nSELECT session_id FROM held"
# With records, every session held is notified (one whose batch held only a
# snapshot or inputs taken in too: its followers read nothing new).
_HELD_SESSIONS_NOTIFIED = "\nSELECT session_id, pg_notify(%s, session_id) FROM held"

_RECORD_TYPES = ("text", "bigint", "text", "float8", "text", "bigint")
_SNAPSHOT_TYPES = ("text", "bigint", "integer", "text", "bigint")
_CONSUMED_TYPES = ("text", "bigint")

#: Up to this many rows go as a ``VALUES`` list of parameters; more (a
#: backlog, a large session created at once) as one array a column, since
#: a statement takes at most 65,535 parameters.
VALUES_MAX = 256


def _relation(types: tuple[str, ...], rows: Sequence[tuple[Any, ...]]) -> tuple[str | None, list[Any]]:
    """The SQL of a relation holding ``rows`` (of columns of ``types``) and
    its parameters; None for no rows."""
    if not rows:
        return None, []
    if len(rows) > VALUES_MAX:
        return _relation_sql(types, -1), [list(column) for column in zip(*rows)]
    return _relation_sql(types, len(rows)), list(itertools.chain.from_iterable(rows))


@functools.lru_cache(maxsize=512)
def _relation_sql(types: tuple[str, ...], count: int) -> str:
    """A ``VALUES`` list of ``count`` rows of parameters (one array a column
    when -1). One text for each count, so that each is prepared once and
    reused."""
    if count < 0:
        return "SELECT * FROM unnest(" + ", ".join(f"%s::{t}[]" for t in types) + ")"
    row = "(" + ", ".join(f"%s::{t}" for t in types) + ")"
    return "VALUES " + ", ".join([row] * count)


@functools.lru_cache(maxsize=512)
def _write_statement(records: str | None, snapshots: str | None, consumed: str | None, one: bool) -> str:
    """The statement writing what the relations hold (None: nothing of that
    kind), for one session or for several."""
    return "".join(
        (
            _HELD_ONE if one else _HELD,
            _RECORDS.format(records, _OF_HELD_ONE if one else _OF_HELD.format("r")) if records else "",
            _SNAPSHOTS.format(snapshots, _OF_HELD_ONE if one else _OF_HELD.format("s")) if snapshots else "",
            _CONSUMED.format(consumed, _OF_HELD_ONE if one else _OF_HELD.format("c")) if consumed else "",
            _HELD_SESSIONS_NOTIFIED if records else _HELD_SESSIONS,
        )
    )


@attrs.define
class Batch:
    """What one write transaction commits."""

    records: list[RecordRow] = attrs.Factory(list)
    snapshots: list[SnapshotRow] = attrs.Factory(list)
    #: Remote inputs taken in: ``(session_id, input id)``.
    consumed: list[tuple[str, int]] = attrs.Factory(list)
    #: The blobs the records refer to (see ``journal.blobs``), by key.
    blobs: dict[str, bytes] = attrs.Factory(dict)

    def __bool__(self) -> bool:
        return bool(self.records or self.snapshots or self.consumed)

    def sessions(self) -> set[str]:
        return {row[0] for rows in (self.records, self.snapshots, self.consumed) for row in rows}


@attrs.frozen
class Channels:
    """The notification channels of a store's schema; the payload of each
    notification is a session id."""

    #: Input was posted for the session.
    inputs: str
    #: Records of the session were committed.
    records: str

    @classmethod
    def of(cls, schema: str) -> Channels:
        return cls(f"{schema}.inputs", f"{schema}.records")


class Database:
    """``where`` names the database in errors (the DSN without a password)."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str,
        holder: str,
        lease_seconds: float,
        create: bool,
        synchronous_commit: SynchronousCommit | None = None,
        migrations: Sequence[tuple[Step, ...]] = MIGRATIONS,
    ) -> None:
        self.holder = holder
        self.lease_seconds = lease_seconds
        self.channels = Channels.of(schema)
        self.where = describe(dsn)
        self._dsn, self._schema = dsn, schema
        self._synchronous_commit = synchronous_commit
        self._rows = _CheckedRows(self.where, self._blob)
        #: Whether the last write may have committed though it failed (its
        #: connection was lost before the answer came).
        self._maybe_written = False
        self._conn = self._connect()
        self._statements = Statements(self._conn)
        self._used_at = time.monotonic()
        try:
            with self.translated():
                with self._conn.transaction():
                    version = check_identity(self._conn, self.where, schema, migrations)
                if version < len(migrations):
                    if version == 0 and not create:
                        raise StoreNotFound(f"no store in schema {schema!r} of {self.where}")
                    migrate(self._conn, self.where, schema, migrations)
                bound_statements(self._conn, lease_seconds)
        except BaseException:
            self._conn.close()
            raise

    def _connect(self) -> psycopg.Connection:
        conn = connect(self._dsn, self.lease_seconds, self.where)
        # Every integer as a bigint: by default its type follows its value
        # (smallint, integer...), and a statement whose parameter types
        # change is parsed and planned again instead of reusing its
        # prepared plan. Each commit has its random checksums.
        conn.adapters.register_dumper(int, Int8Dumper)
        try:
            with self.translated(conn):
                conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self._schema)))
                if self._synchronous_commit is not None:
                    conn.execute(
                        "SELECT set_config('synchronous_commit', %s, false)", (self._synchronous_commit,)
                    )
        except BaseException:
            conn.close()
            raise
        return conn

    def reconnect(self) -> None:
        """Make sure the connection works, opening a new one if it was lost
        (a restarted server, a network cut): ``StoreUnavailable`` while the
        server cannot be reached."""
        if not (self._conn.closed or self._conn.broken):
            try:
                self._conn.execute("SELECT 1")
                return
            except psycopg.Error as exc:
                if not lost(exc, self._conn):
                    raise StoreError(f"{self.where}: {redacted(str(exc), self._dsn)}") from exc
        self._conn.close()
        conn = self._connect()
        with self.translated(conn):
            bound_statements(conn, self.lease_seconds)
        self._conn, self._statements = conn, Statements(conn)

    def abandon(self) -> None:
        """End the connection under a call that waits on it (from another
        thread): the call fails, and the next use opens a new connection."""
        try:
            fd = self._conn.pgconn.socket
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except (OSError, psycopg.Error):
            pass  # already closed

    def fresh(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(self, *args)``, on a connection checked first (and opened
        again if it was lost) when it was idle for ``IDLE_CHECK`` seconds: a
        server restarted meanwhile costs the caller nothing."""
        if time.monotonic() - self._used_at > IDLE_CHECK:
            self.reconnect()
        try:
            return fn(self, *args)
        finally:
            self._used_at = time.monotonic()

    @contextmanager
    def translated(self, conn: psycopg.Connection | None = None) -> Iterator[None]:
        conn = conn or self._conn
        try:
            yield
        except psycopg.Error as exc:
            if lost(exc, conn):
                raise unavailable(exc, self.where, self._dsn) from exc
            raise StoreError(f"{self.where}: {redacted(str(exc), self._dsn)}") from exc

    def close(self) -> None:
        self._conn.close()

    @property
    def connection(self) -> psycopg.Connection:
        """The connection, for statements of other modules run in the
        store's thread (``fleet``), inside ``translated()``."""
        return self._conn

    # -- leases ---------------------------------------------------------------

    def acquire(self, session_id: str) -> tuple[int, int]:
        """Take the session's lease, unless another holder's lease is still
        running (``SessionHeld``); returns the new fencing token and the
        session's last sequence number."""
        conn = self._conn
        with self.translated(), conn.transaction():
            self._info(session_id)
            row = conn.execute(
                "INSERT INTO leases VALUES (%s, %s, 1, clock_timestamp() + make_interval(secs => %s)) "
                "ON CONFLICT (session_id) DO UPDATE "
                "SET holder = excluded.holder, token = leases.token + 1, expires_at = excluded.expires_at "
                "WHERE leases.holder IS NULL OR leases.expires_at <= clock_timestamp() "
                "RETURNING token",
                (session_id, self.holder, self.lease_seconds),
            ).fetchone()
            if row is not None:
                (last_seq,) = one(
                    conn.execute(
                        "SELECT COALESCE(max(seq), 0) FROM records WHERE session_id = %s", (session_id,)
                    )
                )
                return row[0], last_seq
            holder, expires_at, remaining = one(
                conn.execute(
                    "SELECT holder, expires_at, extract(epoch FROM expires_at - clock_timestamp())::float8 "
                    "FROM leases WHERE session_id = %s",
                    (session_id,),
                )
            )
        raise LeaseHeld(session_id, holder, expires_at, max(remaining, 0.0))

    def release(self, session_id: str, token: int) -> None:
        with self.translated():
            self._conn.execute(
                "UPDATE leases SET holder = NULL, expires_at = clock_timestamp() "
                "WHERE session_id = %s AND token = %s AND holder = %s",
                (session_id, token, self.holder),
            )

    def renew(self, held: Sequence[Held]) -> set[str]:
        """Extend the leases still ours; returns the sessions that are not.
        One statement, so a pause of this process never holds a lease row."""
        with self.translated():
            return self._renew(held)

    def _renew(self, held: Sequence[Held]) -> set[str]:
        if not held:
            return set()
        ids, tokens = [h[0] for h in held], [h[1] for h in held]
        rows = self._conn.execute(_RENEW, (self.lease_seconds, ids, tokens, self.holder)).fetchall()
        return set(ids) - {row[0] for row in rows}

    # -- writing --------------------------------------------------------------

    def create_session(
        self, info: SessionInfo, rows: Sequence[RecordRow], blobs: Mapping[str, bytes] | None = None
    ) -> int:
        """Create the session, holding its lease; returns the fencing token."""
        conn = self._conn
        self._insert_blobs(blobs)
        with self.translated(), conn.transaction():
            try:
                with conn.transaction():  # a savepoint, so the error can be told apart
                    conn.execute(
                        f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
                        session_row(info),
                    )
            except errors.UniqueViolation:
                raise SessionExists(f"session {info.session_id!r} already exists in {self.where}") from None
            self._copy_records(rows)
            token: int
            (token,) = one(
                conn.execute(
                    "INSERT INTO leases VALUES (%s, %s, 1, clock_timestamp() + make_interval(secs => %s)) "
                    "RETURNING token",
                    (info.session_id, self.holder, self.lease_seconds),
                )
            )
        return token

    def write(self, batch: Batch, tokens: dict[str, int]) -> set[str]:
        """Commit the batch's rows of the sessions still held, renewing their
        leases, in one statement: one round trip, and the lease rows stay
        locked until the commit, so no takeover falls in between. Returns
        the sessions whose lease is lost, none of whose rows were written."""
        if self._maybe_written and self._written_before(batch.records):
            self._maybe_written = False
            return set()
        self._insert_blobs(batch.blobs)
        statement, params = self._write_statement(batch, tokens)
        with self._writing():
            held = {row[0] for row in self._statements.rows(statement, params)}
        return set(tokens) - held

    def can_write_here(self, batch: Batch) -> bool:
        """Whether ``write_here`` can commit the batch: one statement on a
        connection used lately (else ``write``, in the store's thread, checks
        the connection, writes the blobs, or finds out whether the last
        commit, unanswered, was made)."""
        return (
            not batch.blobs
            and not self._maybe_written
            and time.monotonic() - self._used_at <= IDLE_CHECK
            and not (self._conn.closed or self._conn.broken)
        )

    async def write_here(self, batch: Batch, tokens: dict[str, int]) -> set[str]:
        """``write``, from the trio thread while the store's thread leaves
        the connection alone (``can_write_here``): the same statement,
        without a hop to the thread and back."""
        statement, params = self._write_statement(batch, tokens)
        try:
            with self._writing():
                rows = await self._statements.rows_here(statement, params)
        finally:
            self._used_at = time.monotonic()
        return set(tokens) - {row[0] for row in rows}

    def _write_statement(self, batch: Batch, tokens: dict[str, int]) -> tuple[str, list[Param]]:
        """The statement committing ``batch`` of the sessions of ``tokens``, and its parameters."""
        sessions = sorted(tokens)
        # The latest snapshot of each session: a statement changes a row once.
        snapshots = list({row[0]: row for row in batch.snapshots}.values())
        if len(batch.records) > VALUES_MAX:
            records, record_params = _relation(_RECORD_TYPES, batch.records)
        else:  # the commit's path
            records = _relation_sql(_RECORD_TYPES, len(batch.records)) if batch.records else None
            record_params = self._statements.record_texts(batch.records)
        snapshotted, snapshot_params = _relation(_SNAPSHOT_TYPES, snapshots)
        consumed, consumed_params = _relation(_CONSUMED_TYPES, batch.consumed)
        # In the order of the statement's placeholders.
        one = len(sessions) == 1
        params: list[Param] = [
            self.lease_seconds,
            sessions[0] if one else sessions,
            tokens[sessions[0]] if one else [tokens[s] for s in sessions],
            self.holder,
            *record_params,
            *snapshot_params,
            *consumed_params,
        ]
        if records:
            params.append(self.channels.records)
        return _write_statement(records, snapshotted, consumed, one), params

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Errors of a commit as store errors; one lost unanswered may have
        been made (``_written_before`` finds out before the next)."""
        try:
            with self.translated():
                yield
        except StoreUnavailable:
            self._maybe_written = True
            raise
        except StoreError as exc:
            if isinstance(exc.__cause__, errors.UniqueViolation):
                raise StoreError(f"{exc}: a session is written by two stores at once") from exc.__cause__
            raise
        self._maybe_written = False

    def _written_before(self, rows: Sequence[RecordRow]) -> bool:
        """Whether a batch whose commit went unanswered was committed: its
        records are all there, the same (one statement wrote them all, or
        none)."""
        if not rows:
            return False  # snapshots and consumed inputs are written again harmlessly
        with self.translated():
            same: int
            (same,) = one(
                self._conn.execute(
                    "SELECT count(*) FROM records JOIN unnest(%s::text[], %s::bigint[], %s::text[]) "
                    "AS b(session_id, seq, data) USING (session_id, seq) WHERE records.data = b.data",
                    ([r[0] for r in rows], [r[1] for r in rows], [r[4] for r in rows]),
                )
            )
        if same not in (0, len(rows)):
            raise StoreError(f"{self.where}: a session is written by two stores at once")
        return same == len(rows)

    def _insert_blobs(self, blobs: Mapping[str, bytes] | None) -> None:
        """Commit ``blobs`` before the records that name them: a blob no
        record names is harmless, a record naming a missing blob is not."""
        if blobs:
            with self.translated(), self._conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO blobs VALUES (%s, %s) ON CONFLICT (key) DO NOTHING", list(blobs.items())
                )

    def _blob(self, key: str) -> bytes | None:
        row = self._conn.execute("SELECT data FROM blobs WHERE key = %s", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def _copy_records(self, rows: Sequence[RecordRow]) -> None:
        if rows:
            with self._conn.cursor() as cursor, cursor.copy("COPY records FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)

    def delete_session(self, session_id: str) -> None:
        """Refused (``SessionHeld``) while another store's lease on it runs."""
        conn = self._conn
        with self.translated(), conn.transaction():
            self._info(session_id)  # SessionNotFound
            lease = conn.execute(
                "SELECT holder, expires_at, extract(epoch FROM expires_at - clock_timestamp())::float8 "
                "FROM leases WHERE session_id = %s FOR UPDATE",
                (session_id,),
            ).fetchone()
            if lease is not None and lease[0] not in (None, self.holder) and lease[2] > 0:
                raise LeaseHeld(session_id, *lease)
            for table in ("inputs", "records", "snapshots", "leases", "sessions"):
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE session_id = %s").format(sql.Identifier(table)),
                    (session_id,),
                )

    # -- remote input ---------------------------------------------------------

    def post_input(self, session_id: str, data: str, posted_at: float) -> int:
        """Durable when it returns; the holder is notified at the commit."""
        conn = self._conn
        with self.translated(), conn.transaction():
            try:
                input_id: int
                (input_id,) = one(
                    conn.execute(
                        "INSERT INTO inputs (session_id, posted_at, data) VALUES (%s, %s, %s) RETURNING id",
                        (session_id, posted_at, data),
                    )
                )
            except errors.ForeignKeyViolation:
                raise SessionNotFound(session_id) from None
            conn.execute("SELECT pg_notify(%s, %s)", (self.channels.inputs, session_id))
        return input_id

    def pending_inputs(self, session_id: str, after: int) -> list[tuple[int, str]]:
        with self.translated():
            return self._conn.execute(
                "SELECT id, data FROM inputs WHERE session_id = %s AND id > %s ORDER BY id",
                (session_id, after),
            ).fetchall()

    def records_after(
        self, session_id: str, after: int, limit: int | None = None
    ) -> list[tuple[int, Record]]:
        with self.translated():
            self._info(session_id)
            rows = self._records(session_id, after, limit)
        return list(self._rows.records(session_id, rows, after))

    def stop_listener(self, listener: Listener) -> None:
        listener.stop(self._conn)

    # -- reading --------------------------------------------------------------

    def load_state(self, session_id: str) -> tuple[LoadedSession, int]:
        """The session and its last sequence number."""
        conn = self._conn
        # One snapshot of the database for every read; decoded after it.
        with self.translated(), conn.transaction(), _repeatable_read(conn):
            info = self._info(session_id)
            snapshot = conn.execute(
                "SELECT seq, message_count, state, checksum FROM snapshots WHERE session_id = %s",
                (session_id,),
            ).fetchone()
            after, message_count = snapshot[:2] if snapshot else (0, 0)
            # History reaches to the first ``message_count`` message records
            # (the snapshot knows how many of them a compaction replaced).
            history_rows = conn.execute(
                f"SELECT {_STORED} FROM records WHERE session_id = %s AND kind = %s AND seq <= %s "
                "ORDER BY seq LIMIT %s",
                (session_id, MESSAGE, after, message_count),
            ).fetchall()
            rows = self._records(session_id, after)
        if snapshot is not None:
            seq, count, state, checksum = snapshot
            if snapshot_checksum(session_id, seq, count, state.encode()) != checksum:
                raise StoreCorrupt(f"{self.where}: session {session_id!r}: its snapshot is damaged")
            snapshot = (seq, count, state)
        return self._rows.session(info, snapshot, history_rows, rows)

    def load_records(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        conn = self._conn
        with self.translated(), conn.transaction(), _repeatable_read(conn):
            info = self._info(session_id)
            rows = self._records(session_id, 0)
        return info, self._rows.all_records(session_id, rows)

    def summaries(self) -> list[SessionSummary]:
        with self.translated():
            rows = self._conn.execute(
                f"SELECT {SESSION_COLUMNS}, "
                "  count(*) FILTER (WHERE kind = %s), COALESCE(max(written_at), created_at) "
                "FROM sessions LEFT JOIN records USING (session_id) "
                "GROUP BY session_id ORDER BY created_at, session_id",
                (MESSAGE,),
            ).fetchall()
        return [SessionSummary(SessionInfo(*row[:-2]), row[-2], row[-1]) for row in rows]

    def _info(self, session_id: str) -> SessionInfo:
        row = self._conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = %s",
            (session_id,),
        ).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return SessionInfo(*row)

    def _records(self, session_id: str, after: int, limit: int | None = None) -> list[StoredRecord]:
        return self._conn.execute(
            f"SELECT {_STORED} FROM records WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            (session_id, after, limit),
        ).fetchall()


@contextmanager
def _repeatable_read(conn: psycopg.Connection) -> Iterator[None]:
    # The first statement of the transaction: every read after it sees one
    # state of the database.
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    yield


class _CheckedRows(RowDecoder):
    """Rows as ``StoredRecord``s: a record's JSON is decoded once its
    checksum shows it undamaged, with the blobs it names put back."""

    def __init__(self, where: str, blob: Callable[[str], bytes | None]) -> None:
        super().__init__(where)
        self._blob = blob

    def data(self, session_id: str, row: StoredRecord) -> str | bytes:
        seq, kind, data, checksum = row
        if text_checksum(session_id, seq, kind, data) != checksum:
            raise StoreCorrupt(
                f"{self.where}: session {session_id!r}: record {seq} is damaged (checksum mismatch)"
            )
        if refers_to_blobs(data):
            return restore(data.encode(), self._blob, f"{self.where}: session {session_id!r}: record {seq}")
        return data
