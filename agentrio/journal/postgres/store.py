"""``PostgresStore``: sessions in a PostgreSQL database that many runtimes,
on many hosts, share; each session written by the one that holds it."""

from __future__ import annotations

import math
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import attrs
import trio

from ...messages import UserMessage
from ..buffered import BufferedStore
from ..checksum import snapshot_checksum
from ..codec import encode_state
from ..outcomes import Outcome, wait_outcome
from ..ownership import Lease, LeaseHeld, LeaseLost
from ..projection import SessionState
from ..records import Record
from ..remote import RemoteInput, decode_input, encode_input, inbox_id
from ..rows import record_rows
from ..store import (
    Claims,
    LoadedSession,
    Named,
    SessionInfo,
    SessionNotFound,
    SessionSummary,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
    check_id,
    check_info,
)
from . import fleet
from .connection import redacted
from .database import Batch, Channels, Database, SynchronousCommit
from .listener import Listener

T = TypeVar("T")

#: How long a lease lasts unless renewed, in seconds.
DEFAULT_LEASE = 15.0

#: A lease whose renewal is not confirmed this part of a lease before it
#: runs out is given up (self-fencing): with the renewals three times a
#: lease, two in a row went unanswered.
FENCE_MARGIN = 0.25

#: The longest name PostgreSQL keeps, in bytes.
MAX_NAME = 63


class PostgresStore(BufferedStore[Database, Batch]):
    """Sessions in a PostgreSQL database (``dsn``: a libpq connection
    string or URI), in the schema ``schema``, created on first use unless
    ``create=False``. Same barriers as ``SQLiteStore``: ``append`` encodes
    and buffers, the buffer is committed in batches, each in one statement
    and one round trip, and ``sync`` returns once everything appended before
    it is committed (with PostgreSQL's default ``synchronous_commit``,
    flushed to its disk). The store's own thread makes every other call; a
    commit is sent from the trio thread, waiting on the socket there, while
    that thread leaves the connection alone.

    **Ownership.** A session is written by one store at a time: the one
    holding its lease. Creating a session, or restoring it with
    ``load_state``, takes its lease, or raises ``SessionHeld`` naming the
    holder and when its lease ends (``acquire(..., wait=True)`` waits for
    it instead). ``load_session`` and ``list_summaries`` only read, and need
    no lease. A lease lasts ``lease`` seconds (the database's clock) and
    the store renews every lease it holds a few times within that, and with
    each commit; ``release`` (and closing the store) gives it up. A lease
    that ran out is taken over by the next store that asks, and the
    takeover increments its fencing token. Every commit carries the tokens
    of its sessions, and the lease rows stay locked until it ends: the
    records of a session taken over are refused (none is written, nor any
    appended later), and from then on ``sync`` of that session raises
    ``LeaseLost``; ``lease(session_id).lost`` is set as soon as the store
    learns of it. The other sessions of the store go on.

    **Faults.** Every wait on the database is bounded by about a lease
    (``connection``). A lost connection is opened again (at its next use,
    or by the failed store's retries, see ``BufferedStore``), and the leases
    held through an outage are renewed or found lost. The store keeps its
    own view of each lease's end (``Lease.confirmed_until``) and gives up a
    lease whose renewal is not confirmed ``FENCE_MARGIN`` of a lease before
    it would run out (self-fencing: ``lost`` is set, and the ``Runtime``
    stops the session's work), so that no tool of a cut-off holder runs
    once another store may take its session over.

    **Input from anywhere.** ``post_input`` makes input for a session
    durable in the database wherever the session is held, and wakes its
    holder, which takes it with ``next_inputs`` and ``consume_inputs``
    (exactly once, across takeovers too). ``next_records`` follows a
    session that another store writes. Notifications come through a second
    connection, opened on first use.

    **Durability.** ``sync`` returns once the commit is acknowledged; with
    ``synchronous_commit=None`` the server's setting says what that means
    (by default, ``"on"``: flushed to its disk, like ``SQLiteStore``'s
    ``synchronous="FULL"``). With ``"off"`` the server acknowledges a commit
    before its disk flush (within three ``wal_writer_delay``): a commit
    survives this process being killed, but not a crash of the server or
    its machine, like ``SQLiteStore``'s ``synchronous="NORMAL"``, and costs
    the server about half the CPU time. The barriers, fencing and checksums
    are the same either way.

    ``holder`` names the store in the leases (and so in ``SessionHeld``
    errors): host, process and a random part unless given.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "agentrio",
        lease: float = DEFAULT_LEASE,
        holder: str | None = None,
        create: bool = True,
        synchronous_commit: SynchronousCommit | None = None,
    ) -> None:
        if synchronous_commit not in (None, "on", "off"):
            raise ValueError(f"synchronous_commit must be 'on', 'off' or None, got {synchronous_commit!r}")
        if not (lease > 0 and math.isfinite(lease)):
            raise ValueError(f"lease must be a positive number of seconds, got {lease!r}")
        # Notification channels are named after the schema, and PostgreSQL
        # names hold 63 bytes.
        if not schema or len(f"{schema}.records".encode()) > MAX_NAME:
            raise ValueError(f"schema must be a name of 1 to {MAX_NAME - 8} bytes, got {schema!r}")
        self._dsn = dsn
        self.schema = schema
        self.lease_seconds = lease
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self._create = create
        self._synchronous_commit: SynchronousCommit | None = synchronous_commit
        #: The sessions this store holds (or held, until it is told to
        #: forget them: a lost lease stays, to say so).
        self._leases: dict[str, Lease] = {}
        #: The last sequence number of each session this store writes.
        self._last_seq: dict[str, int] = {}
        #: The id of the last remote input handed out, for each session held.
        self._inputs_after: dict[str, int] = {}
        self._listener: Listener | None = None
        self._starting_listener = trio.Lock()
        self._claims = Claims()
        self._channels = Channels.of(schema)
        #: Set once the commit being made from the trio thread is done (None: there is none).
        self._writing_here: trio.Event | None = None
        #: Calls waiting for it: the next commit goes through the thread,
        #: after them, so that commits never hold them off.
        self._calls_waiting = 0
        super().__init__(f"agentrio store {self.holder}")

    def __repr__(self) -> str:
        return f"PostgresStore(schema={self.schema!r}, holder={self.holder!r})"

    @property
    def dsn(self) -> str:
        """The connection string without its secrets (password)."""
        return redacted(self._dsn, self._dsn)

    # -- the BufferedStore parts ----------------------------------------------

    def _connect(self) -> Database:
        return Database(
            self._dsn,
            schema=self.schema,
            holder=self.holder,
            lease_seconds=self.lease_seconds,
            create=self._create,
            synchronous_commit=self._synchronous_commit,
        )

    def _new_batch(self) -> Batch:
        return Batch()

    def _commit(self, db: Database, batch: Batch) -> Callable[[], tuple[dict[str, int], float, set[str]]]:
        tokens, sent = self._tokens(batch), time.monotonic()
        return lambda: (tokens, sent, db.fresh(Database.write, batch, tokens))

    def _tokens(self, batch: Batch) -> dict[str, int]:
        """The tokens as they are when the batch is handed over; records
        appended to a session while it was being released are refused."""
        return {
            session_id: lease.token if (lease := self._leases.get(session_id)) else 0
            for session_id in batch.sessions()
        }

    def _write(self) -> None:
        """A batch that one statement commits, on a connection the store's
        thread is not using, is committed from the trio thread
        (``Database.write_here``), sparing two hops between threads; any
        other goes to the thread."""
        thread, db, nursery = self._thread, self._db, self._nursery
        if (
            self._writing
            or not self._batch
            or self._failure is not None
            or thread is None
            or db is None
            or nursery is None
            or not thread.idle
            or self._calls_waiting
            or not db.can_write_here(self._batch)
        ):
            super()._write()
            return
        batch, upto = self._batch, self._buffered
        self._batch, self._writing = self._new_batch(), True
        self._writing_here = trio.Event()  # from now on, until it is set, the connection is the commit's
        nursery.start_soon(self._write_here_task, db, batch, upto, self._writing_here)

    async def _write_here_task(self, db: Database, batch: Batch, upto: int, done: trio.Event) -> None:
        tokens, sent = self._tokens(batch), time.monotonic()
        try:
            # Once sent, its outcome must be known, as of a call in the thread.
            with trio.CancelScope(shield=True):
                lost = await db.write_here(batch, tokens)
        except Exception as exc:  # noqa: BLE001 - the store's failure, as if the thread had raised it
            result: tuple[Any, BaseException | None] = (None, exc)
        else:
            result = ((tokens, sent, lost), None)
        finally:
            self._writing_here = None
            done.set()
        self._written(upto, batch, result)

    def _committed(self, value: tuple[dict[str, int], float, set[str]]) -> None:
        tokens, sent, lost = value
        self._renewed(tokens, sent, lost, "its records since were refused")

    def _renewed(self, tokens: dict[str, int], sent: float, lost: set[str], how: str) -> None:
        """The leases of ``tokens`` were renewed by a request sent at ``sent``
        (monotonic clock), but for those ``lost``."""
        for session_id, token in tokens.items():
            if session_id in lost:
                self._lose(session_id, token, how)
            elif (lease := self._leases.get(session_id)) is not None and lease.token == token:
                lease.confirm(sent + self.lease_seconds)

    async def _serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Renews the leases three times a lease, and fences those that would
        run out unconfirmed."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._fence_when_due)
            task_status.started()
            while True:
                await trio.sleep(self.lease_seconds / 3)
                if self._failure is None:
                    await self._renew("found when renewing it")

    async def _renew(self, how: str) -> None:
        held = {s: lease.token for s, lease in self._leases.items() if lease.error is None}
        if not held:
            return
        sent = time.monotonic()
        try:
            lost = await self._call(Database.renew, list(held.items()))
        except StoreError as exc:
            self._fail(exc)
            return
        self._renewed(held, sent, lost, how)

    async def _fence_when_due(self) -> None:
        """Self-fencing: a lease whose renewal is not confirmed ``margin``
        before it would run out (a partition, a stalled or lost database)
        is given up here first: its session's work is stopped
        (``lease.lost``, then ``LeaseLost``) before another store may take
        the session over."""
        margin = self.lease_seconds * FENCE_MARGIN
        while True:
            now = time.monotonic()
            due = [lease for lease in self._leases.values() if lease.error is None]
            for lease in due:
                if lease.confirmed_until - margin <= now:
                    self._fence(lease)
            soonest = min((lease.confirmed_until - margin for lease in due), default=now + margin)
            await trio.sleep(min(max(soonest - now, 0.01), margin))

    def _fence(self, lease: Lease) -> None:
        self._lose(
            lease.session_id,
            lease.token,
            f"its renewal was not confirmed {self.lease_seconds * FENCE_MARGIN:.1f} s before the lease "
            "ran out: given up before another store could take it",
            taken=False,
        )
        # A call stuck on a silent connection would hold up the store's
        # thread for good: end the connection, and the store reconnects.
        busy = self._writing_here is not None or (self._thread is not None and not self._thread.idle)
        if busy and self._db is not None:
            self._db.abandon()

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        # Not while a commit from the trio thread uses the connection; the
        # call is handed to the thread without a checkpoint after this.
        self._calls_waiting += 1
        try:
            while self._writing_here is not None:
                await self._writing_here.wait()
        finally:
            self._calls_waiting -= 1
        result: T = await super()._call(Database.fresh, fn, *args)
        return result

    def _reconnect(self, db: Database) -> None:
        db.reconnect()

    async def _recovering_hook(self) -> None:
        """Leases held through the outage are renewed if they are still
        this store's; those taken over meanwhile are lost (``LeaseLost``)."""
        held = {s: lease.token for s, lease in self._leases.items() if lease.error is None}
        sent = time.monotonic()
        thread, db = self._running()
        lost = await thread.call(Database.renew, db, list(held.items()))
        self._renewed(held, sent, lost, "found when the database was back")

    async def claim_session(self, session_id: str) -> None:
        """One writer per session in this process (across hosts, the lease
        taken when the session is opened says who writes)."""
        check_id(session_id)
        self._claims.claim(session_id, self)

    async def release_session(self, session_id: str) -> None:
        """End the claim, and give the session's lease up once what was
        appended to it is committed. Raises nothing for a failed store (the
        failure is told by a barrier, or by the closing): the lease is only
        forgotten then, and runs out by itself."""
        self._claims.release(session_id, self)
        if session_id in self._leases:
            await self._all_committed()
            await self._release(session_id)

    async def _close(self) -> StoreError | None:
        self._claims.release_all(self)
        if self._listener is not None:
            self._listener.stopping = True  # even if the connection is gone
        return await super()._close()

    async def _closing(self) -> None:
        try:
            if self._listener is not None:
                await self._call(Database.stop_listener, self._listener)
            for session_id in list(self._leases):
                await self._release(session_id)
        except StoreError:
            pass  # everything is committed; the listener polls, the leases end by themselves
        self._listener = None

    def _lose(self, session_id: str, token: int, how: str, *, taken: bool = True) -> None:
        lease = self._leases.get(session_id)
        if lease is None or lease.token != token or lease.error is not None:
            return  # released, or taken again, meanwhile
        what = "was taken over by another store after" if taken else "is no longer held:"
        lease.error = LeaseLost(
            f"session {session_id!r} {what} the lease of {self.holder} "
            f"(token {token}) ran out ({how}): nothing this store appends to it is written"
        )
        lease.lost.set()

    # -- ownership ------------------------------------------------------------

    def lease(self, session_id: str) -> Lease | None:
        """The session's lease if this store holds it (or lost it and was
        not told to forget it)."""
        return self._leases.get(session_id)

    async def acquire(self, session_id: str, *, wait: bool = False) -> Lease:
        """Take the session's lease (a no-op if this store holds it). If
        another holder's lease runs, raise ``SessionHeld``, or with
        ``wait=True`` wait until it ends and take it then. Raises
        ``SessionNotFound`` for a session the database does not hold."""
        check_id(session_id)
        lease = self._leases.get(session_id)
        if lease is not None and lease.error is None:
            return lease
        while True:
            sent = time.monotonic()
            try:
                token, last_seq = await self._call(Database.acquire, session_id)
            except LeaseHeld as held:
                if not wait:
                    raise
                # Until the lease ends, or sooner: a release ends it early.
                await trio.sleep(min(held.remaining, self.lease_seconds / 3) + 0.01)
            else:
                break
        self._leases[session_id] = lease = Lease(session_id, self.holder, token, sent + self.lease_seconds)
        self._last_seq[session_id] = last_seq
        self._inputs_after.pop(session_id, None)  # a new holder takes every input left
        return lease

    async def release(self, session_id: str) -> None:
        """Commit what was appended to the session, then give its lease up
        (or forget a lost one)."""
        if session_id not in self._leases:
            return
        await self._sync_all()
        await self._release(session_id)

    async def _release(self, session_id: str) -> None:
        lease = self._leases.pop(session_id)
        self._last_seq.pop(session_id, None)
        self._inputs_after.pop(session_id, None)
        if lease.error is None and self._failure is None:
            await self._call(Database.release, session_id, lease.token)

    def _held(self, session_id: str, *, or_lost: bool = False) -> Lease:
        """The session's lease; a lost one raises unless ``or_lost`` (a lost
        lease says more than a failed store)."""
        lease = self._leases.get(session_id)
        if lease is not None and lease.error is not None:
            if or_lost:
                return lease
            raise lease.error
        self._check_usable()
        if lease is None:
            raise SessionNotFound(f"session {session_id!r} is not held by {self!r}: create or load it first")
        return lease

    # -- input and records from anywhere ---------------------------------------

    async def post_input(self, session_id: str, item: RemoteInput) -> RemoteInput:
        """Post input for the session, wherever it is held (or if it is held
        nowhere yet): durable when this returns, and the holder's
        ``next_inputs`` wakes. Returns the input with its id."""
        check_id(session_id)
        input_id = await self._call(Database.post_input, session_id, encode_input(item), time.time())
        return attrs.evolve(item, id=input_id)

    async def next_inputs(self, session_id: str) -> list[RemoteInput]:
        """For the holder: the inputs posted for the session that this store
        has not handed out yet, in order, once there is one. An input stays
        posted until ``consume_inputs`` says it was taken in; a store that
        takes the session over is handed every input still posted. Waits
        through an outage of the database."""
        check_id(session_id)

        async def read() -> list[RemoteInput]:
            self._held(session_id)
            after = self._inputs_after.get(session_id, 0)
            rows = await self._call(Database.pending_inputs, session_id, after)
            if rows:
                self._held(session_id)  # still ours
                self._inputs_after[session_id] = rows[-1][0]
            return [self._decoded_input(session_id, input_id, data) for input_id, data in rows]

        return await self._next(self._channels.inputs, session_id, read)

    async def consume_inputs(self, session_id: str, ids: Sequence[int]) -> None:
        """Never waits. The inputs are deleted in the commit that writes what
        was appended to the session so far and in the same task step: call
        it right after appending the records that take them in, and an input
        is taken in exactly once, whoever holds the session after a crash."""
        if self._held(session_id, or_lost=True).error is None:
            self._batch.consumed += [(session_id, input_id) for input_id in ids]
            self._buffer()

    async def next_records(
        self, session_id: str, after: int, *, limit: int | None = None
    ) -> list[tuple[int, Record]]:
        """The session's committed records after sequence number ``after``,
        with their sequence numbers (at most ``limit`` of them), once there
        is one: to follow a session that another store (or this one) writes.
        Woken by the commits' notifications, never polling; waits through an
        outage of the database."""
        check_id(session_id)
        return await self._next(
            self._channels.records, session_id, lambda: self.read_records(session_id, after, limit=limit)
        )

    async def read_records(
        self, session_id: str, after: int = 0, *, limit: int | None = None
    ) -> list[tuple[int, Record]]:
        """The session's committed records after sequence number ``after``
        (at most ``limit``), with their sequence numbers, now: none if there
        are none yet. Needs no lease."""
        check_id(session_id)
        return await self._call(Database.records_after, session_id, after, limit)

    async def _next(self, channel: str, session_id: str, read: Callable[[], Awaitable[list[T]]]) -> list[T]:
        """What ``read`` returns once it is not empty, read again at each
        notification on ``channel`` for the session; while the store is
        failed, once it has recovered."""
        while True:
            await self.until_usable()
            try:
                listener = await self._listening()
                self._check_listening(listener)
                changed = listener.changed(channel, session_id)
                found = await read()
            except StoreError:
                if self._failure is None or self._nursery is None:
                    raise  # not an outage, or the store is closing
                continue  # an outage: read again once it is over
            if found:
                return found
            await changed.wait()

    async def _listening(self) -> Listener:
        self._check_usable()
        if self._nursery is None:
            raise StoreError(f"{self!r} is closing: no more notifications are heard")
        async with self._starting_listener:
            if self._listener is None:
                _, db = self._running()
                listener = Listener(self._dsn, self.lease_seconds, attrs.astuple(db.channels), db.where)
                try:
                    await self._nursery.start(listener.serve)
                except StoreUnavailable as exc:
                    self._fail(exc)  # the server is down: the store retries
                    raise
                self._listener = listener
        return self._listener

    def _check_listening(self, listener: Listener) -> None:
        self._check_usable()
        if not listener.alive:
            raise StoreError(f"{self!r}: the connection listening for notifications is closed")

    def _decoded_input(self, session_id: str, input_id: int, data: str) -> RemoteInput:
        try:
            return decode_input(input_id, data)
        except Exception as exc:
            raise StoreCorrupt(
                f"{self._running()[1].where}: session {session_id!r}: input {input_id} cannot be read: {exc}"
            ) from exc

    # -- the Store interface --------------------------------------------------

    async def create_session(self, info: SessionInfo, records: Sequence[Record] = ()) -> None:
        check_info(info)
        blobs: dict[str, bytes] = {}
        rows = record_rows(info.session_id, 0, records, blobs)
        sent = time.monotonic()
        token = await self._call(Database.create_session, info, rows, blobs)
        self._leases[info.session_id] = Lease(info.session_id, self.holder, token, sent + self.lease_seconds)
        self._last_seq[info.session_id] = len(rows)

    async def load_session(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        check_id(session_id)
        await self._sync_all()  # read back what this store appended
        return await self._call(Database.load_records, session_id)

    async def load_state(self, session_id: str) -> LoadedSession:
        """Restore the session, taking its lease (``SessionHeld`` if another
        store holds it)."""
        check_id(session_id)
        await self._sync_all()
        held_before = session_id in self._leases and self._leases[session_id].error is None
        await self.acquire(session_id)
        try:
            loaded, last_seq = await self._call(Database.load_state, session_id)
        except BaseException:
            if not held_before:
                with trio.CancelScope(shield=True):
                    await self._release(session_id)
            raise
        self._last_seq[session_id] = last_seq
        return loaded

    async def append(self, session_id: str, records: Sequence[Record]) -> None:
        """Records of a session whose lease is lost are refused like those
        the commit refuses, wherever the loss was found: the next ``sync``
        raises ``LeaseLost``, a barrier the writer handles anyway."""
        lease = self._held(session_id, or_lost=True)
        last_seq = self._last_seq[session_id]
        blobs: dict[str, bytes] = {}
        rows = record_rows(session_id, last_seq, records, blobs)  # fails before anything is buffered
        self._last_seq[session_id] = last_seq + len(rows)
        if lease.error is None:
            self._batch.records += rows
            self._batch.blobs.update(blobs)
            self._buffer()

    async def save_snapshot(self, session_id: str, state: SessionState) -> None:
        lease = self._held(session_id, or_lost=True)
        if lease.error is None:
            seq = self._last_seq[session_id]
            count, data = state.message_records, encode_state(state)
            checksum = snapshot_checksum(session_id, seq, count, data.encode())
            self._batch.snapshots.append((session_id, seq, count, data, checksum))
            self._buffer()

    async def sync(self, session_id: str | None = None) -> None:
        """Every session's appends so far are committed together; raises
        ``LeaseLost`` if ``session_id``'s were refused, or its lease is gone."""
        lease = self._leases.get(session_id) if session_id is not None else None
        try:
            await self._sync_all()
        except StoreError as exc:
            if lease is not None and lease.error is not None:
                raise lease.error from exc
            raise
        if lease is not None and lease.error is not None:
            raise lease.error

    async def list_sessions(self) -> list[SessionInfo]:
        return [summary.info for summary in await self.list_summaries()]

    async def list_summaries(self) -> list[SessionSummary]:
        await self._sync_all()
        return await self._call(Database.summaries)

    async def delete_session(self, session_id: str) -> None:
        """Refused with ``SessionHeld`` while another store holds it."""
        check_id(session_id)
        await self._sync_all()
        await self._call(Database.delete_session, session_id)
        self._leases.pop(session_id, None)
        self._last_seq.pop(session_id, None)
        self._inputs_after.pop(session_id, None)

    # -- the fleet ------------------------------------------------------------

    async def submit(self, session_id: str, prompt: str | UserMessage, *, spec: str | Named) -> str:
        """Create the session if it is new, recording ``spec`` (a spec name,
        or an ``AgentSpec`` whose name is taken) as the spec that runs it,
        and post ``prompt`` as a follow-up, in one transaction: durable when
        this returns, and the runtimes serving that spec are woken. No lease
        is taken: whichever runtime serves the spec (``rt.serve``) claims
        it. Returns the input's id (its inbox id), for ``outcome``."""
        name = spec if isinstance(spec, str) else spec.name
        message = prompt if isinstance(prompt, UserMessage) else UserMessage(prompt)
        data = encode_input(RemoteInput("followup", message))
        info = SessionInfo(session_id, agent_name=name)
        check_info(info)
        return inbox_id(await self._call(fleet.submit, info, data, time.time()))

    async def outcome(self, session_id: str, input_id: str, *, timeout: float | None = None) -> Outcome:
        """The outcome of input ``input_id`` (as ``submit`` or ``post_input``
        gave it: ``remote_<id>``) once the turn that answered it has ended,
        whichever store wrote it, read from the journal (see ``outcomes``).
        Waits for commits of the session's records (LISTEN/NOTIFY), and
        raises ``TimeoutError`` after ``timeout`` seconds."""
        return await wait_outcome(self.next_records, session_id, input_id, timeout)

    async def claim_runnable(self, specs: Sequence[str], limit: int, *, report: int = 10) -> fleet.Claimed:
        """Take the leases of at most ``limit`` sessions of ``specs`` that have
        work and no live holder (see ``fleet``), skipping those another store
        is claiming at the same moment; this store then holds them, as after
        ``acquire``."""
        sent = time.monotonic()
        claimed = await self._call(fleet.claim, list(specs), limit, report)
        for session_id, _, token, last_seq in claimed.sessions:
            self._leases[session_id] = Lease(session_id, self.holder, token, sent + self.lease_seconds)
            self._last_seq[session_id] = last_seq
            self._inputs_after.pop(session_id, None)
        return claimed

    async def leave(self, session_id: str, token: int) -> None:
        """Give the session (held with fencing token ``token``) up with work
        left in it: committed, released, and made runnable for whichever
        store claims it next (``fleet.leave``)."""
        await self.release(session_id)
        await self._call(fleet.leave, session_id, token)

    async def input_posted(self) -> trio.Event:
        """An event set by the next input posted (or session left) for any
        session of the schema."""
        listener = await self._listening()
        self._check_listening(listener)
        return listener.changed_any(self._running()[1].channels.inputs)
