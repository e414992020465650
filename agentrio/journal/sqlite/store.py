"""``SQLiteStore``: many sessions' journals in one SQLite file."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Self, TypeVar

import trio

from ..codec import encode_record
from ..projection import SessionState
from ..records import MessageAppended, Record
from ..store import LoadedSession, SessionInfo, SessionNotFound, SessionSummary, StoreError
from .connection import Synchronous
from .database import Batch, Database, PendingSnapshot, SessionCursor

T = TypeVar("T")


class SQLiteStore:
    """Sessions in one SQLite file in WAL mode. Several processes may share
    the file, each writing its own sessions.

    ``append`` encodes its records at once (a record that is not JSON fails
    there) and buffers them; a writer task commits whatever is buffered, one
    transaction a batch, on a worker thread, so the trio thread never waits
    for the disk. ``sync`` waits for the commit that covers everything
    appended before it.

    A crash loses what was appended but not yet committed. That is safe
    because the agent syncs wherever it matters: before a tool's body runs,
    before an exclusive call, and at the end of every turn. What survives is
    always a journal the agent could have left, which crash repair closes.

    A committed batch survives the process being killed. With
    ``synchronous="FULL"`` it also survives an OS crash or a power cut, at
    the cost of an fsync a commit. With ``create=False`` a missing file is an
    error rather than a new store.

    ``async with store`` opens it; the block that opened it closes it, after
    committing what is buffered, and blocks entered meanwhile in the same
    task nest. A store opened by one task can be used, and entered, by
    others until then.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, synchronous: Synchronous = "NORMAL"
    ) -> None:
        self.path = Path(path)
        self._open_database = functools.partial(Database, self.path, create=create, synchronous=synchronous)
        self._db: Database | None = None
        self._opening = trio.Lock()
        self._owner: trio.lowlevel.Task | None = None
        self._depth = 0
        self._stack: AsyncExitStack | None = None
        self._writer: trio.CancelScope | None = None
        # Work on the connection, one call at a time.
        self._limiter = trio.CapacityLimiter(1)
        self._cursors: dict[str, SessionCursor] = {}
        self._batch = Batch()
        self._work = trio.Event()
        # Appends and snapshots buffered so far, and how many are committed.
        self._buffered = 0
        self._committed = 0
        self._commit = trio.Event()
        self._failure: StoreError | None = None
        #: Whether a caller has been told of the failure.
        self._failure_told = False

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    # -- opening and closing --------------------------------------------------

    async def __aenter__(self) -> Self:
        task = trio.lowlevel.current_task()
        async with self._opening:
            if self._db is None:
                await self._open()
                self._owner = task
        if task is self._owner:
            self._depth += 1
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        if trio.lowlevel.current_task() is not self._owner:
            return
        self._depth -= 1
        if self._depth:
            return
        # The writer finishes the batch it is committing, then stops.
        self._writer.cancel()
        await self._stack.aclose()
        with trio.CancelScope(shield=True):
            failure = await self._close()
        # Records that never reached the file must not go unnoticed.
        if failure is not None and not self._failure_told and exc_type is None:
            raise failure

    async def _open(self) -> None:
        self._db = await trio.to_thread.run_sync(self._open_database)
        self._failure, self._failure_told = None, False
        async with AsyncExitStack() as stack:
            nursery = await stack.enter_async_context(trio.open_nursery())
            nursery.start_soon(self._write_loop)
            self._writer = nursery.cancel_scope
            self._stack = stack.pop_all()

    async def _close(self) -> StoreError | None:
        """Commit what the writer left, and close the file."""
        try:
            if self._failure is None:
                await self._flush()
        finally:
            await self._run(self._db.close)
            self._db = self._stack = self._writer = self._owner = None
            self._cursors.clear()
        return self._failure

    # -- the writer -----------------------------------------------------------

    async def _write_loop(self) -> None:
        while self._failure is None:
            await self._work.wait()
            with trio.CancelScope(shield=True):
                await self._flush()

    async def _flush(self) -> None:
        batch, upto = self._batch, self._buffered
        self._batch, self._work = Batch(), trio.Event()
        try:
            if batch:
                await self._run(self._db.write, batch)
            self._committed = upto
        except StoreError as exc:
            self._failure = exc
        self._commit.set()
        self._commit = trio.Event()

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        return await trio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    def _check_usable(self) -> Database:
        if self._failure is not None:
            self._failure_told = True
            raise StoreError(
                f"the store failed, nothing more can be written: {self._failure}"
            ) from self._failure
        if self._db is None:
            raise StoreError(
                f"{self!r} is not open: use `async with` (a Runtime opens the store it is given)"
            )
        return self._db

    def _cursor(self, session_id: str) -> SessionCursor:
        self._check_usable()
        try:
            return self._cursors[session_id]
        except KeyError:
            raise SessionNotFound(
                f"session {session_id!r} was not created or loaded through {self!r}"
            ) from None

    def _buffer(self) -> None:
        self._buffered += 1
        self._work.set()

    # -- the Store interface --------------------------------------------------

    async def create_session(self, info: SessionInfo, records: Sequence[Record] = ()) -> None:
        db = self._check_usable()
        rows = [encode_record(r) for r in records]
        messages = sum(isinstance(r, MessageAppended) for r in records)
        await self._run(db.create_session, info, rows, messages)
        self._cursors[info.session_id] = SessionCursor(last_seq=len(rows), chunked=0)

    async def load_session(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        await self.sync()  # read back what this store appended
        info, records, cursor = await self._run(self._check_usable().load_records, session_id)
        # A session being written here knows its cursor better than the file.
        self._cursors.setdefault(session_id, cursor)
        return info, records

    async def load_state(self, session_id: str) -> LoadedSession:
        await self.sync()
        loaded, cursor = await self._run(self._check_usable().load_state, session_id)
        self._cursors.setdefault(session_id, cursor)
        return loaded

    async def append(self, session_id: str, records: Sequence[Record]) -> None:
        cursor = self._cursor(session_id)
        rows = [encode_record(r) for r in records]  # fails before anything is buffered
        batch = self._batch
        for row in rows:
            cursor.last_seq += 1
            batch.records.append((session_id, cursor.last_seq, row))
        messages = sum(isinstance(r, MessageAppended) for r in records)
        batch.new_messages[session_id] = batch.new_messages.get(session_id, 0) + messages
        self._buffer()

    async def save_snapshot(self, session_id: str, state: SessionState) -> None:
        cursor = self._cursor(session_id)
        self._batch.snapshots.append(PendingSnapshot(session_id, cursor.last_seq, state, cursor.chunked))
        cursor.chunked = len(state.messages)
        self._buffer()

    async def sync(self, session_id: str | None = None) -> None:
        """Every session's appends so far are committed together."""
        self._check_usable()
        target = self._buffered
        while self._committed < target:
            await self._commit.wait()
            self._check_usable()

    async def list_sessions(self) -> list[SessionInfo]:
        return [summary.info for summary in await self.list_summaries()]

    async def list_summaries(self) -> list[SessionSummary]:
        await self.sync()
        return await self._run(self._check_usable().summaries)
