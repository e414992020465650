"""The trio half of a store whose database calls block: a thread that owns
the connection, and a buffer of appends that it commits in batches."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, Generic, Protocol, Self, TypeVar

import trio

from .store import StoreError, StoreUnavailable
from .thread import DatabaseThread, Result

log = logging.getLogger(__name__)

#: A failed store retries after this many seconds, then twice as long each
#: time, up to ``RETRY_MAX`` between two tries: bounded, and never a busy loop.
RETRY_FIRST = 0.1
RETRY_MAX = 1.0

#: A store whose barriers commit in the trio thread (``_commits_here``)
#: commits what no barrier asked for at the latest this many seconds after
#: it was appended, or once this many appends wait: bounded in time and in
#: memory, and no commit of its own between two barriers close together.
FLUSH_AFTER = 0.05
FLUSH_APPENDS = 256


class Batch(Protocol):
    def __bool__(self) -> bool: ...


class Closable(Protocol):
    def close(self) -> None: ...


B = TypeVar("B", bound=Batch)
D = TypeVar("D", bound=Closable)
T = TypeVar("T")


class BufferedStore(Generic[D, B]):
    """Appends are buffered in the trio thread, and the store's own thread
    commits the buffer in one transaction once the appending task yields;
    what is appended meanwhile waits for the next one. ``sync`` waits for the
    commit that covers everything buffered before it.

    ``async with store`` opens it; the block that opened it closes it, after
    committing what is buffered, and blocks entered meanwhile in the same
    task nest. A store opened by one task can be used, and entered, by
    others until then. A failed commit (or a lost connection,
    ``StoreUnavailable``) fails the store: ``failed`` is set at once, so that
    a ``Runtime`` stops its agents' work before anything more acts
    unrecorded, and every append and barrier raises ``StoreError`` naming the
    store until it recovers. The store keeps the batch that failed and
    retries it, with backoff (``RETRY_FIRST`` doubling up to ``RETRY_MAX``
    seconds, reconnecting first where the subclass can): once it commits,
    ``failed`` is a new unset event and ``recovered`` is set (a new unset
    one at the next failure), and nothing appended before the failure is
    lost. Closing a store that is still failed raises its failure, unless a
    caller was told.

    A subclass says how to open its database (``_connect``, run in the
    thread), which batch to start (``_new_batch``), how to commit one
    (``_commit``) and what to make of its result (``_committed``), and may
    run tasks of its own while open (``_serve``). One whose commits need not
    wait (``_commits_here``) lets a barrier that finds the thread idle
    commit in the trio thread (``_try_commit_here``), sparing the round trip.
    Such a barrier does not yield to other tasks (the caller's checkpoint
    before it is a cancel point only): its caller goes on to await the
    work the barrier guards, a tool's body or the next input, which yields
    anyway.
    """

    #: Whether ``_sync_all`` first tries ``_try_commit_here``.
    _commits_here = False

    def __init__(self, name: str) -> None:
        self._name = name
        self._db: D | None = None
        self._thread: DatabaseThread | None = None
        self._nursery: trio.Nursery | None = None
        self._opening = trio.Lock()
        self._owner: trio.lowlevel.Task | None = None
        self._depth = 0
        self._stack: AsyncExitStack | None = None
        self._serving: trio.CancelScope | None = None  # the subclass's tasks
        self._batch: B = self._new_batch()
        # Appends and snapshots buffered so far, and how many are committed.
        self._buffered = 0
        self._committed_upto = 0
        # Set after the next commit, made by the first task to wait for it:
        # a barrier that commits here has no one to tell.
        self._commit_done: trio.Event | None = None
        self._flush_wanted = trio.Event()
        self._writing = False
        self._failure: StoreError | None = None
        #: Whether a caller has been told of the failure.
        self._failure_told = False
        #: Set once a write has failed (a new event once the store recovers).
        self.failed = trio.Event()
        #: Set once a failed store has recovered (a new event at each failure).
        self.recovered = trio.Event()
        #: The batch whose commit failed, and the appends it covers: retried
        #: before anything else is written.
        self._retry: tuple[B, int] | None = None
        self._recovering: trio.CancelScope | None = None
        #: The wait before the next retry, and when the store last recovered:
        #: a store failing again soon after goes on from its last wait.
        self._backoff = RETRY_FIRST
        self._recovered_at = -math.inf

    # -- for subclasses -------------------------------------------------------

    def _connect(self) -> D:
        raise NotImplementedError

    def _new_batch(self) -> B:
        raise NotImplementedError

    def _commit(self, db: D, batch: B) -> Callable[[], Any]:
        """What commits ``batch``: called in the trio thread (so it may read
        the store's state), it returns the call the store's thread makes."""
        raise NotImplementedError

    def _committed(self, value: Any) -> None:
        """Told, in the trio thread, what that call returned."""

    def _try_commit_here(self, db: D, batch: B) -> bool:
        """Commit ``batch`` in the trio thread, while the store's thread is
        idle, if that needs no waiting; ``False`` when nothing was written."""
        raise NotImplementedError

    async def _serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def _closing(self) -> None:
        """Runs in the thread's last moments, after the last commit."""

    def _reconnect(self, db: D) -> None:
        """In the store's thread, before a failed store retries: make the
        database reachable again (raise if it is not)."""

    async def _recovering_hook(self) -> None:
        """Runs once a failed store's retried batch is committed, before it
        counts as recovered (raise if it cannot)."""

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(db, *args)`` in the store's thread. A lost database fails the
        store (``StoreUnavailable``), which then retries by itself."""
        db = self._check_usable()
        thread, _ = self._running()
        try:
            return await thread.call(fn, db, *args)
        except StoreUnavailable as exc:
            if self._nursery is not None:  # (closing, nothing more is written anyway)
                self._fail(exc)
            raise

    @property
    def failure(self) -> StoreError | None:
        """Why the store is failed, while it is."""
        return self._failure

    async def until_usable(self) -> None:
        """Wait while the store is failed (returns at once if it is not)."""
        while self._failure is not None:
            await self.recovered.wait()

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
        stack, nursery, self._stack, self._nursery = self._stack, self._nursery, None, None
        assert stack is not None and nursery is not None and self._serving is not None  # open
        try:
            with trio.CancelScope(shield=True):
                self._serving.cancel()  # before the thread ends: it may call into it
                if self._recovering is not None:
                    self._recovering.cancel()
                failure = await self._close()
        finally:
            nursery.cancel_scope.cancel()  # the flusher; the thread has ended
            await stack.aclose()
        # Records that never reached the database must not go unnoticed.
        if failure is not None and not self._failure_told and exc_type is None:
            raise failure

    async def _open(self) -> None:
        if self.failed.is_set():
            self.failed = trio.Event()
        self.recovered, self._retry = trio.Event(), None
        thread = DatabaseThread(self._name)
        async with AsyncExitStack() as stack:
            nursery = await stack.enter_async_context(trio.open_nursery())
            await nursery.start(thread.serve)
            failure: Exception | None = None
            try:
                self._db = await thread.call(self._connect)
            except Exception as exc:  # noqa: BLE001 - any failure to connect is the store's failure
                # Raised once the thread has ended, not from inside the nursery.
                thread.stop()
                failure = exc
            else:
                self._thread, self._nursery = thread, nursery
                self._failure, self._failure_told = None, False
                nursery.start_soon(self._flush_when_asked)
                self._serving = trio.CancelScope()
                await nursery.start(self._serve_in, self._serving)
                self._stack = stack.pop_all()
        if failure is not None:
            raise failure

    async def _serve_in(self, scope: trio.CancelScope, *, task_status: trio.TaskStatus[None]) -> None:
        with scope:
            await self._serve(task_status=task_status)

    async def _close(self) -> StoreError | None:
        """Commit what is buffered, close the database and end the thread."""
        try:
            while self._writing or (self._batch and self._failure is None):
                self._write()
                await self._next_commit()
            if self._failure is None:
                await self._closing()
        finally:
            thread, db = self._running()
            try:
                await thread.call(db.close)
            finally:
                thread.stop()
                self._db = self._thread = self._owner = None
        return self._failure

    # -- the writer -----------------------------------------------------------

    def _buffer(self) -> None:
        self._buffered += 1
        if self._commits_here and self._buffered - self._committed_upto >= FLUSH_APPENDS:
            self._write()
        self._flush_wanted.set()

    async def _flush_when_asked(self) -> None:
        # Runs once the appending task yields, so that what it appends until
        # then joins the batch; a store that commits here waits longer for a
        # barrier to take it.
        while True:
            await self._flush_wanted.wait()
            if self._commits_here:
                await trio.sleep(FLUSH_AFTER)
                self._flush_wanted = trio.Event()
                self._write_here()
            else:
                self._flush_wanted = trio.Event()
            self._write()

    def _write(self) -> None:
        """Hand the buffer to the thread, unless a batch is being written
        (its end hands over the next) or nothing can be written."""
        if self._writing or not self._batch or self._thread is None or self._failure is not None:
            return
        thread, db = self._running()
        batch, upto = self._batch, self._buffered
        self._batch, self._writing = self._new_batch(), True
        thread.submit(self._commit(db, batch), (), functools.partial(self._written, upto, batch))

    def _written(self, upto: int, batch: B | None, result: Result) -> None:
        self._writing = False
        value, error = result
        if error is None:
            self._committed_upto = upto
            self._committed(value)
        else:
            if batch is not None:
                self._retry = (batch, upto)
            self._fail(error)
        done, self._commit_done = self._commit_done, None
        if done is not None:
            done.set()
        self._write()

    async def _next_commit(self) -> None:
        """Wait for the end of the commit being written."""
        if self._commit_done is None:
            self._commit_done = trio.Event()
        await self._commit_done.wait()

    def _write_here(self) -> None:
        """Commit the buffer in the trio thread if the store's thread is idle
        and ``_try_commit_here`` can; else leave it."""
        if self._writing or not self._batch or self._failure is not None or self._thread is None:
            return
        thread, db = self._running()
        if not thread.idle:
            return
        upto = self._buffered
        try:
            if not self._try_commit_here(db, self._batch):
                return
        except Exception as exc:  # noqa: BLE001 - a commit here may fail in any way
            self._written(upto, None, (None, exc))  # the batch stays buffered
            return
        self._batch = self._new_batch()
        self._written(upto, None, (None, None))

    def _fail(self, error: BaseException) -> None:
        """Fail the store (once: a failed store stays failed until it
        recovers) and start retrying."""
        if self._failure is not None:
            return
        if isinstance(error, StoreError):
            self._failure = error
        else:  # raising here would end the trio run
            self._failure = StoreError(f"{self!r}: a write failed: {error!r}")
            self._failure.__cause__ = error
        log.warning("%r failed, retrying every %.1f s at most: %s", self, RETRY_MAX, self._failure)
        if self.recovered.is_set():
            self.recovered = trio.Event()
        self.failed.set()
        now = trio.current_time()
        if now - self._recovered_at > 10 * RETRY_MAX:
            self._backoff = RETRY_FIRST
        if self._nursery is not None:
            self._recovering = trio.CancelScope()
            self._nursery.start_soon(self._recover, self._recovering, now)

    async def _recover(self, scope: trio.CancelScope, since: float) -> None:
        """Retry until the database is reachable and what failed to commit
        is committed, then the store is usable again."""
        with scope:
            while True:
                await trio.sleep(self._backoff)
                self._backoff = min(self._backoff * 2, RETRY_MAX)
                while self._writing:  # a batch still on its way is retried first, if it fails
                    await self._next_commit()
                thread, db = self._running()
                try:
                    await thread.call(self._reconnect, db)
                    if self._retry is None and self._batch:  # a commit in the trio thread failed
                        self._retry, self._batch = (self._batch, self._buffered), self._new_batch()
                    if self._retry is not None:
                        batch, upto = self._retry
                        value = await thread.call(self._commit(db, batch))
                        self._retry, self._committed_upto = None, upto
                        self._committed(value)
                    await self._recovering_hook()
                except Exception as exc:  # noqa: BLE001 - recovery retries whatever failed
                    log.debug("%r: still failed: %s", self, exc)
                    continue
                break
            self._failure, self._failure_told, self._recovering = None, False, None
            self._recovered_at = trio.current_time()
            self.failed = trio.Event()
            self.recovered.set()
            log.warning("%r recovered after %.1f s", self, trio.current_time() - since)
            self._write()

    def _running(self) -> tuple[DatabaseThread, D]:
        """The thread and the database, while the store is open."""
        assert self._thread is not None and self._db is not None
        return self._thread, self._db

    def _check_usable(self) -> D:
        if self._failure is not None:
            self._failure_told = True
            raise StoreError(
                f"{self!r} failed: nothing more is written until it recovers: {self._failure}"
            ) from self._failure
        if self._db is None:
            raise StoreError(
                f"{self!r} is not open: use `async with` (a Runtime opens the store it is given)"
            )
        return self._db

    async def _all_committed(self) -> None:
        """Wait until every append so far is committed, or the store has
        failed or closed (then nothing more of it is written). Unlike
        ``sync`` it raises nothing: a failure is told by the next barrier,
        or by the closing."""
        target = self._buffered
        while self._committed_upto < target and self._failure is None and self._db is not None:
            self._write()
            await self._next_commit()

    async def _sync_all(self) -> None:
        """Every append so far is committed."""
        self._check_usable()
        target = self._buffered
        if self._commits_here:
            self._write_here()
            self._check_usable()
            if self._committed_upto >= target:
                return
        self._write()  # now rather than when the scheduled call runs
        while self._committed_upto < target:
            await self._next_commit()
            self._check_usable()
