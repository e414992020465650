"""``SQLiteStore``: many sessions' journals in one SQLite file."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import trio

from ...messages import UserMessage
from ..buffered import BufferedStore
from ..checksum import snapshot_checksum
from ..codec import encode_state
from ..outcomes import Outcome, wait_outcome
from ..projection import SessionState
from ..records import Record
from ..rows import record_rows
from ..store import (
    Claims,
    LoadedSession,
    Named,
    SessionInfo,
    SessionNotFound,
    SessionSummary,
    StoreError,
    check_id,
    check_info,
)
from ..thread import Result
from . import fleet
from .connection import Synchronous
from .database import Batch, Database
from .locks import Lock, SessionLocks

#: The claims of every SQLiteStore in this process, one set per file (by
#: device and inode, however its path is spelled), so that two store objects
#: on one file cannot both write a session. An entry per file ever opened.
_claims_by_file: dict[tuple[int, int], Claims] = {}


class SQLiteStore(BufferedStore[Database, Batch]):
    """Sessions in one SQLite file in WAL mode. Several processes may share
    the file, each writing its own sessions.

    ``append`` encodes its records at once (a record that is not JSON fails
    there) and buffers them. ``sync`` waits for the commit that covers
    everything appended before it. The trio thread never waits for the disk
    nor for another process: with ``synchronous="NORMAL"`` a commit only
    writes to the OS's cache, so a ``sync`` that finds the store's thread
    idle commits right there, without a round trip to the thread, unless
    another process holds the write lock; and what is appended between two
    barriers waits for the next one, so that it takes one commit (what no
    barrier asks for is committed ``buffered.FLUSH_AFTER`` seconds after it
    was appended at the latest, or handed to the thread once
    ``buffered.FLUSH_APPENDS`` appends wait). With ``synchronous="FULL"``
    the buffer goes to the store's own thread once the appending task
    yields, and is committed there in one transaction; what is appended
    meanwhile waits for the next one, so batches grow with the load.
    Checkpoints, which sync the file, run in the store's thread.

    A crash loses what was appended but not yet committed. That is safe
    because the agent syncs wherever it matters: before a tool's body runs,
    before an exclusive call, and at the end of every turn. What survives is
    always a journal the agent could have left, which crash repair closes.

    A committed batch survives the process being killed. With
    ``synchronous="FULL"`` it also survives an OS crash or a power cut, at
    the cost of an fsync a commit. With ``create=False`` a missing file is an
    error rather than a new store. With ``read_only=True`` (implying
    ``create=False``) it only reads: it writes nothing to the file, nor
    beside it where its folder cannot be written (a read-only filesystem:
    ``connection.read_only_uri``), refuses a file whose schema is older than
    this code's rather than upgrading it, and every write (``create_session``,
    ``append``, ``save_snapshot``, ``claim_session``, ``delete_session``)
    raises ``StoreError``. A new file is made whole, so an empty one
    is a damaged store (``StoreCorrupt``), never a new one; every record and
    snapshot carries a checksum checked when it is read.

    ``async with store`` opens it; the block that opened it closes it, after
    committing what is buffered, and blocks entered meanwhile in the same
    task nest. A store opened by one task can be used, and entered, by
    others until then.

    ``claim_session`` claims a session for its writer until
    ``release_session`` or the store's closing, and raises ``SessionHeld``
    at once if another writer has it: a store of this process on the same
    file, or another process (``locks.SessionLocked``, naming its pid and
    host). Across processes the claim is a lock file beside the database
    (``<file>-locks/``, see ``locks``), which the kernel releases when its
    process ends, however it ends: a crashed or killed holder never blocks
    a session, and the next opener repairs it. Reading needs no claim, and
    works while a session is held. ``release_session`` commits what was
    appended before another process can take the session; ``delete_session``
    is refused while another writer holds it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        synchronous: Synchronous = "NORMAL",
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._open_database = functools.partial(
            Database,
            self.path,
            create=create and not read_only,
            synchronous=synchronous,
            read_only=read_only,
        )
        #: Whether a barrier may commit in the trio thread (see above).
        self._commits_here = synchronous == "NORMAL"
        self._claims = Claims()
        self._locks = SessionLocks(self.path)
        #: The lock file of each session this store has claimed.
        self._locked: dict[str, Lock] = {}
        #: The last sequence number of each session this store writes.
        self._last_seq: dict[str, int] = {}
        #: Set by the next commit (see ``committed_event``); made when asked
        #: for, so that a commit nobody waits for sets nothing.
        self._commit_event: trio.Event | None = None
        super().__init__(f"agentrio store {self.path.name}")

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    # -- the BufferedStore parts ----------------------------------------------

    def _connect(self) -> Database:
        return self._open_database()

    def _new_batch(self) -> Batch:
        return Batch()

    def _commit(self, db: Database, batch: Batch) -> Callable[[], None]:
        return functools.partial(db.write, batch)

    def _try_commit_here(self, db: Database, batch: Batch) -> bool:
        if not db.try_write(batch):
            return False
        if db.checkpoint_due:  # it syncs the file: in the store's thread
            thread, _ = self._running()
            thread.submit(db.checkpoint, (), self._checkpointed)
        return True

    def _checkpointed(self, result: Result) -> None:
        _, error = result
        if error is not None:
            self._fail(error)

    async def _open(self) -> None:
        await super()._open()
        stat = os.stat(self.path)
        self._claims = _claims_by_file.setdefault((stat.st_dev, stat.st_ino), Claims())

    async def _close(self) -> StoreError | None:
        try:
            return await super()._close()  # commits what is buffered first
        finally:
            self._last_seq.clear()
            while self._locked:
                self._locks.release(self._locked.popitem()[1])
            self._claims.release_all(self)

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreError(f"{self!r} was opened read-only")

    def _last_seq_of(self, session_id: str) -> int:
        self._check_usable()
        self._check_writable()
        try:
            return self._last_seq[session_id]
        except KeyError:
            raise SessionNotFound(
                f"session {session_id!r} was not created or loaded through {self!r}"
            ) from None

    # -- the Store interface --------------------------------------------------

    async def create_session(self, info: SessionInfo, records: Sequence[Record] = ()) -> None:
        check_info(info)
        self._check_usable()
        self._check_writable()
        blobs: dict[str, bytes] = {}
        rows = record_rows(info.session_id, 0, records, blobs)
        await self._call(Database.create_session, info, rows, blobs)
        self._last_seq[info.session_id] = len(rows)

    async def load_session(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        check_id(session_id)
        await self.sync()  # read back what this store appended
        info, records = await self._call(Database.load_records, session_id)
        self._saw(session_id, len(records))
        return info, records

    async def load_state(self, session_id: str) -> LoadedSession:
        check_id(session_id)
        await self.sync()
        loaded, last_seq = await self._call(Database.load_state, session_id)
        self._saw(session_id, last_seq)
        return loaded

    def _saw(self, session_id: str, last_seq: int) -> None:
        if self.read_only:
            return  # so that ``append`` asks ``_last_seq_of``, which refuses
        # A session being written here knows its last record better than the
        # file (records appended while it was read are not in it yet); one
        # that another process wrote since this store last did, the file.
        self._last_seq[session_id] = max(self._last_seq.get(session_id, 0), last_seq)

    async def append(self, session_id: str, records: Sequence[Record]) -> None:
        last_seq = self._last_seq.get(session_id)
        if last_seq is None or self._failure is not None or self._db is None:
            last_seq = self._last_seq_of(session_id)  # raises
        blobs: dict[str, bytes] = {}
        rows = record_rows(session_id, last_seq, records, blobs)  # fails before anything is buffered
        self._batch.records += rows
        self._batch.blobs.update(blobs)
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
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._sync_all()

    async def claim_session(self, session_id: str) -> None:
        check_id(session_id)
        self._check_usable()
        self._check_writable()
        self._claims.claim(session_id, self)  # this process's writers first
        try:
            self._locked[session_id] = self._locks.acquire(session_id)
        except BaseException:
            self._claims.release(session_id, self)
            raise

    async def release_session(self, session_id: str) -> None:
        lock = self._locked.pop(session_id, None)
        if lock is not None:
            try:
                # Another process may take the session the moment it is
                # released: what was appended to it is committed first.
                with trio.CancelScope(shield=True):
                    await self._all_committed()
            finally:
                self._locks.release(lock)
        self._claims.release(session_id, self)

    async def list_sessions(self) -> list[SessionInfo]:
        return [summary.info for summary in await self.list_summaries()]

    async def list_summaries(self) -> list[SessionSummary]:
        await self.sync()
        return await self._call(Database.summaries)

    async def delete_session(self, session_id: str) -> None:
        """Refused with ``SessionHeld`` while another writer holds the
        session (a claim of this store is no obstacle)."""
        check_id(session_id)
        await self.sync()
        if session_id in self._locked:
            await self._call(Database.delete_session, session_id)
        else:
            await self.claim_session(session_id)
            try:
                await self._call(Database.delete_session, session_id)
            finally:
                await self.release_session(session_id)
        self._last_seq.pop(session_id, None)

    # -- the fleet, on one host (see ``fleet``) ---------------------------------

    def _committed(self, value: object) -> None:
        event, self._commit_event = self._commit_event, None
        if event is not None:
            event.set()

    def committed_event(self) -> trio.Event:
        """An event set by this store's next commit."""
        if self._commit_event is None:
            self._commit_event = trio.Event()
        return self._commit_event

    async def submit(self, session_id: str, prompt: str | UserMessage, *, spec: str | Named) -> str:
        """Create the session if it is new, recording ``spec`` (a name, or an
        ``AgentSpec``) as the spec that runs it, and queue ``prompt`` as a
        follow-up; durable when this returns. ``SessionHeld`` while a writer
        has the session open: give it to that agent (``agent.followup``).
        The runtime that opens the session next runs it once resumed.
        Returns the input's id, for ``outcome``."""
        name = spec if isinstance(spec, str) else spec.name
        message = prompt if isinstance(prompt, UserMessage) else UserMessage(prompt)
        return await fleet.submit(self, session_id, message, name)

    async def outcome(self, session_id: str, input_id: str, *, timeout: float | None = None) -> Outcome:
        """The outcome of input ``input_id`` once the turn that answered it has
        ended (see ``outcomes``); ``TimeoutError`` after ``timeout`` seconds.
        Woken by this store's commits, and re-reading the journal every
        ``fleet.OTHERS_EVERY`` seconds for another process's."""
        return await wait_outcome(functools.partial(fleet.next_records, self), session_id, input_id, timeout)
