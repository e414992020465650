"""The trio half of a store whose database calls block: a thread that owns
the connection, and a buffer of appends that it commits in batches."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, Generic, Protocol, Self, TypeVar

import trio

from .store import StoreError
from .thread import DatabaseThread, Result


class Batch(Protocol):
    def __bool__(self) -> bool: ...


class Closable(Protocol):
    def close(self) -> None: ...


B = TypeVar("B", bound=Batch)
D = TypeVar("D", bound=Closable)


class BufferedStore(Generic[D, B]):
    """Appends are buffered in the trio thread, and the store's own thread
    commits the buffer in one transaction once the appending task yields;
    what is appended meanwhile waits for the next one. ``sync`` waits for the
    commit that covers everything buffered before it.

    ``async with store`` opens it; the block that opened it closes it, after
    committing what is buffered, and blocks entered meanwhile in the same
    task nest. A store opened by one task can be used, and entered, by
    others until then. A failed commit fails the store: every barrier after
    it raises, and so does the close if no caller was told; ``failed`` is
    set at once (a new event each time the store is opened), so that a
    ``Runtime`` stops its agents' work before anything more acts unrecorded.

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
        #: Set once a write has failed.
        self.failed = trio.Event()

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

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(db, *args)`` in the store's thread."""
        db = self._check_usable()
        return await self._thread.call(fn, db, *args)

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
        try:
            with trio.CancelScope(shield=True):
                self._serving.cancel()  # before the thread ends: it may call into it
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
        thread = DatabaseThread(self._name)
        async with AsyncExitStack() as stack:
            nursery = await stack.enter_async_context(trio.open_nursery())
            await nursery.start(thread.serve)
            try:
                self._db = await thread.call(self._connect)
            except Exception as exc:
                # Raised once the thread has ended, not from inside the nursery.
                thread.stop()
                failure = exc
            else:
                failure = None
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
            try:
                await self._thread.call(self._db.close)
            finally:
                self._thread.stop()
                self._db = self._thread = self._owner = None
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
        self._batch, self._writing = self._new_batch(), True
        self._thread.submit(self._commit(self._db, batch), (), functools.partial(self._written, upto))

    def _written(self, upto: int, result: Result) -> None:
        self._writing = False
        value, error = result
        if error is None:
            self._committed_upto = upto
            self._committed(value)
        else:
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
        if self._writing or not self._batch or self._failure is not None or not self._thread.idle:
            return
        upto = self._buffered
        try:
            if not self._try_commit_here(self._db, self._batch):
                return
        except Exception as exc:
            self._written(upto, (None, exc))
            return
        self._batch = self._new_batch()
        self._written(upto, (None, None))

    def _fail(self, error: BaseException) -> None:
        if isinstance(error, StoreError):
            self._failure = error
        else:  # raising here would end the trio run
            self._failure = StoreError(f"{self!r}: a write failed: {error!r}")
            self._failure.__cause__ = error
        self.failed.set()

    def _check_usable(self) -> D:
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
