"""``SQLiteStore``: many sessions' journals in one SQLite file."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Self

import trio

from ..checksum import record_checksum, snapshot_checksum
from ..codec import encode_record, encode_state
from ..projection import SessionState
from ..records import Record
from ..store import Claims, LoadedSession, SessionInfo, SessionNotFound, SessionSummary, StoreError
from .connection import Synchronous
from .database import Batch, Database, RecordRow
from .thread import DatabaseThread, Result

#: The claims of every SQLiteStore in this process, one set per file (by
#: device and inode, however its path is spelled), so that two store objects
#: on one file cannot both write a session. An entry per file ever opened.
_claims_by_file: dict[tuple[int, int], Claims] = {}


class SQLiteStore:
    """Sessions in one SQLite file in WAL mode. Several processes may share
    the file, each writing its own sessions.

    ``append`` encodes its records at once (a record that is not JSON fails
    there) and buffers them. Once the appending task yields, the buffer goes
    to the store's own thread, which commits it in one transaction; what is
    appended meanwhile waits for the next one. So batches grow with the
    load. ``sync`` waits for the commit that covers everything appended
    before it. The trio thread never waits for the disk nor for another
    process: with ``synchronous="NORMAL"`` a commit only writes to the OS's
    cache, so a ``sync`` that finds the store's thread idle commits right
    there, without a round trip to the thread, unless another process holds
    the write lock; checkpoints, which sync the file, and every commit with
    ``synchronous="FULL"`` run in the store's thread.

    A crash loses what was appended but not yet committed. That is safe
    because the agent syncs wherever it matters: before a tool's body runs,
    before an exclusive call, and at the end of every turn. What survives is
    always a journal the agent could have left, which crash repair closes.

    A committed batch survives the process being killed. With
    ``synchronous="FULL"`` it also survives an OS crash or a power cut, at
    the cost of an fsync a commit. With ``create=False`` a missing file is an
    error rather than a new store. A new file is made whole, so an empty one
    is a damaged store (``StoreCorrupt``), never a new one; every record and
    snapshot carries a checksum checked when it is read.

    ``async with store`` opens it; the block that opened it closes it, after
    committing what is buffered, and blocks entered meanwhile in the same
    task nest. A store opened by one task can be used, and entered, by
    others until then.

    ``claim_session`` claims a session for its writer until
    ``release_session`` or the store's closing; a claim by any SQLiteStore
    of this process on the same file makes it raise ``SessionHeld``. Other
    processes' claims are not seen.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, synchronous: Synchronous = "NORMAL"
    ) -> None:
        self.path = Path(path)
        self._open_database = functools.partial(Database, self.path, create=create, synchronous=synchronous)
        #: Whether a barrier may commit in the trio thread (see above).
        self._commit_here = synchronous == "NORMAL"
        self._db: Database | None = None
        self._thread: DatabaseThread | None = None
        self._nursery: trio.Nursery | None = None
        self._opening = trio.Lock()
        self._owner: trio.lowlevel.Task | None = None
        self._depth = 0
        self._stack: AsyncExitStack | None = None
        self._claims = Claims()
        #: The last sequence number of each session this store writes.
        self._last_seq: dict[str, int] = {}
        self._batch = Batch()
        # Appends and snapshots buffered so far, and how many are committed.
        self._buffered = 0
        self._committed = 0
        self._commit = trio.Event()  # set, and replaced, after each write
        self._flush_wanted = trio.Event()
        self._writing = False
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
        with trio.CancelScope(shield=True):
            failure = await self._close()
        stack, nursery, self._stack, self._nursery = self._stack, self._nursery, None, None
        nursery.cancel_scope.cancel()  # the flusher; the thread has ended
        await stack.aclose()
        # Records that never reached the file must not go unnoticed.
        if failure is not None and not self._failure_told and exc_type is None:
            raise failure

    async def _open(self) -> None:
        thread = DatabaseThread(f"agentrio store {self.path.name}")
        async with AsyncExitStack() as stack:
            nursery = await stack.enter_async_context(trio.open_nursery())
            await nursery.start(thread.serve)
            try:
                self._db = await thread.call(self._open_database)
            except Exception as exc:
                # Raised once the thread has ended, not from inside the nursery.
                thread.stop()
                failure = exc
            else:
                failure = None
                self._thread, self._nursery = thread, nursery
                stat = os.stat(self.path)
                self._claims = _claims_by_file.setdefault((stat.st_dev, stat.st_ino), Claims())
                self._failure, self._failure_told = None, False
                nursery.start_soon(self._flush_when_asked)
                self._stack = stack.pop_all()
        if failure is not None:
            raise failure

    async def _close(self) -> StoreError | None:
        """Commit what is buffered, close the file and end the thread."""
        try:
            while self._writing or (self._batch and self._failure is None):
                self._write()
                await self._commit.wait()
        finally:
            try:
                await self._thread.call(self._db.close)
            finally:
                self._thread.stop()
                self._db = self._thread = self._owner = None
                self._last_seq.clear()
                self._claims.release_all(self)
        return self._failure

    # -- the writer -----------------------------------------------------------

    def _buffer(self) -> None:
        self._buffered += 1
        self._flush_wanted.set()

    async def _flush_when_asked(self) -> None:
        # Runs once the appending task yields, so that what it appends until
        # then joins the batch.
        while True:
            await self._flush_wanted.wait()
            self._flush_wanted = trio.Event()
            self._write()

    def _write(self) -> None:
        """Hand the buffer to the thread, unless a batch is being written
        (its end hands over the next) or nothing can be written."""
        if self._writing or not self._batch or self._thread is None or self._failure is not None:
            return
        batch, upto = self._batch, self._buffered
        self._batch, self._writing = Batch(), True
        self._thread.submit(self._db.write, (batch,), functools.partial(self._written, upto))

    def _written(self, upto: int, result: Result) -> None:
        self._writing = False
        _, error = result
        if error is None:
            self._committed = upto
        else:
            self._fail(error)
        self._commit.set()
        self._commit = trio.Event()
        self._write()

    def _fail(self, error: BaseException) -> None:
        if isinstance(error, StoreError):
            self._failure = error
        else:  # raising in a delivery would end the trio run
            self._failure = StoreError(f"{self.path}: a write failed: {error!r}")
            self._failure.__cause__ = error

    def _write_here(self) -> None:
        """Commit the buffer in the trio thread, if the store's thread is
        idle and no other process holds the write lock; else leave it."""
        if self._writing or not self._batch or self._failure is not None or not self._thread.idle:
            return
        db, upto = self._db, self._buffered
        try:
            if not db.try_write(self._batch):
                return
        except Exception as exc:
            self._written(upto, (None, exc))
            return
        self._batch = Batch()
        self._written(upto, (None, None))
        if db.checkpoint_due:
            self._thread.submit(db.checkpoint, (), self._checkpointed)

    def _checkpointed(self, result: Result) -> None:
        _, error = result
        if error is not None:
            self._fail(error)

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

    def _last_seq_of(self, session_id: str) -> int:
        self._check_usable()
        try:
            return self._last_seq[session_id]
        except KeyError:
            raise SessionNotFound(
                f"session {session_id!r} was not created or loaded through {self!r}"
            ) from None

    # -- the Store interface --------------------------------------------------

    async def create_session(self, info: SessionInfo, records: Sequence[Record] = ()) -> None:
        db = self._check_usable()
        rows = _rows(info.session_id, 0, records)
        await self._thread.call(db.create_session, info, rows)
        self._last_seq[info.session_id] = len(rows)

    async def load_session(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        await self.sync()  # read back what this store appended
        info, records = await self._thread.call(self._check_usable().load_records, session_id)
        # A session being written here knows its last record better than the file.
        self._last_seq.setdefault(session_id, len(records))
        return info, records

    async def load_state(self, session_id: str) -> LoadedSession:
        await self.sync()
        loaded, last_seq = await self._thread.call(self._check_usable().load_state, session_id)
        self._last_seq.setdefault(session_id, last_seq)
        return loaded

    async def append(self, session_id: str, records: Sequence[Record]) -> None:
        last_seq = self._last_seq_of(session_id)
        rows = _rows(session_id, last_seq, records)  # fails before anything is buffered
        self._batch.records += rows
        self._last_seq[session_id] = last_seq + len(rows)
        self._buffer()

    async def save_snapshot(self, session_id: str, state: SessionState) -> None:
        # Encoded now, since ``state`` goes on changing; without its history
        # it is small.
        seq = self._last_seq_of(session_id)
        count, data = state.message_records, encode_state(state)
        checksum = snapshot_checksum(session_id, seq, count, data.encode())
        self._batch.snapshots.append((session_id, seq, count, data, checksum))
        self._buffer()

    async def sync(self, session_id: str | None = None) -> None:
        """Every session's appends so far are committed together."""
        self._check_usable()
        await trio.lowlevel.checkpoint_if_cancelled()
        target = self._buffered
        if self._commit_here:
            self._write_here()
            self._check_usable()
            if self._committed >= target:
                await trio.lowlevel.cancel_shielded_checkpoint()
                return
        self._write()  # now rather than when the scheduled call runs
        while self._committed < target:
            await self._commit.wait()
            self._check_usable()

    async def claim_session(self, session_id: str) -> None:
        self._check_usable()
        self._claims.claim(session_id, self)

    async def release_session(self, session_id: str) -> None:
        self._claims.release(session_id, self)

    async def list_sessions(self) -> list[SessionInfo]:
        return [summary.info for summary in await self.list_summaries()]

    async def list_summaries(self) -> list[SessionSummary]:
        await self.sync()
        return await self._thread.call(self._check_usable().summaries)

    async def delete_session(self, session_id: str) -> None:
        await self.sync()
        await self._thread.call(self._check_usable().delete_session, session_id)
        self._last_seq.pop(session_id, None)


def _rows(session_id: str, last_seq: int, records: Sequence[Record]) -> list[RecordRow]:
    now = time.time()
    rows = []
    for seq, record in enumerate(records, last_seq + 1):
        data = encode_record(record)
        checksum = record_checksum(session_id, seq, record.type, data.encode())
        rows.append((session_id, seq, record.type, now, data, checksum))
    return rows
