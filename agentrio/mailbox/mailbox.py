"""The mailbox: how work reaches an actor."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import attrs
import outcome
import trio

M = TypeVar("M")


class MailboxClosed(RuntimeError):
    """The actor behind this mailbox stopped accepting messages."""


class ActorStopped(RuntimeError):
    """The actor stopped before it answered a call."""


@attrs.define(eq=False)
class Envelope(Generic[M]):
    """A message in transit, with the reply slot of a ``call``.

    The actor answers with ``reply`` or ``fail`` exactly once; a request
    whose caller was cancelled is ``withdrawn`` and the actor skips it.
    """

    message: M
    #: None for a one-way ``send``.
    _done: trio.Event | None = None
    withdrawn: bool = False
    _value: Any = None
    _error: BaseException | None = None

    @property
    def wants_reply(self) -> bool:
        return self._done is not None

    @property
    def answered(self) -> bool:
        return self._done is not None and self._done.is_set()

    def reply(self, value: Any = None) -> None:
        if self._done is not None and not self._done.is_set():
            self._value = value
            self._done.set()

    def fail(self, error: BaseException) -> None:
        if self._done is not None and not self._done.is_set():
            self._error = error
            self._done.set()


class Mailbox(Generic[M]):
    """A bounded queue of typed messages that one actor reads.

    Guarantees:

    - **Bounded**: at most ``capacity`` messages wait; ``send`` and ``call``
      wait while the mailbox is full (backpressure), so a fast producer
      cannot grow memory without bound.
    - **Order**: messages are read in the order their senders got them in;
      senders that wait for room get it in the order they began to wait.
    - ``call`` returns the actor's reply, or raises the error the actor
      answered with. A caller cancelled while waiting withdraws its request:
      the actor skips a request it has not started, and a request it has
      started is answered into the void.
    - **Closing** (``close``): later senders, and senders still waiting for
      room, get ``MailboxClosed``; callers still waiting for a reply get
      ``ActorStopped``; messages still queued are failed the same way by
      ``close``, and the reader gets ``MailboxClosed``.

    Senders may live in any task; only the owning actor reads, one task at a
    time (a second concurrent reader gets ``trio.BusyResourceError``).

    An idle mailbox is two small objects (itself and its queue): an actor
    runtime holds one per actor, and the garbage collector walks them all.
    """

    def __init__(self, capacity: int, name: str = "mailbox") -> None:
        if capacity < 1:
            raise ValueError(f"a mailbox's capacity must be at least 1, got {capacity!r}")
        self.name = name
        self._capacity = capacity
        # A list, not a deque: it holds at most ``capacity`` envelopes, and
        # an empty deque costs ~600 bytes.
        self._queue: list[Envelope[M]] = []
        #: The reader's task while it waits for a message.
        self._reader: trio.lowlevel.Task | None = None
        #: Senders waiting for room, in order, with what each sends (made
        #: the first time the mailbox is full).
        self._blocked: dict[trio.lowlevel.Task, Envelope[M]] | None = None
        #: Calls waiting for their reply (made at the first call).
        self._pending: set[Envelope[M]] | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._queue)

    async def send(self, message: M) -> None:
        """Post ``message`` without waiting for it to be handled (but waiting
        while the mailbox is full)."""
        if await self._post(Envelope(message)):
            await trio.lowlevel.cancel_shielded_checkpoint()

    def send_nowait(self, message: M) -> None:
        """Post ``message`` if there is room; ``trio.WouldBlock`` if full."""
        if not self._delivered(Envelope(message)):
            raise trio.WouldBlock

    async def call(self, message: M) -> Any:
        """Post ``message`` and wait for the actor's reply."""
        envelope: Envelope[M] = Envelope(message, trio.Event())
        if self._pending is None:
            self._pending = set()
        self._pending.add(envelope)
        try:
            await self._post(envelope)  # (no schedule point of its own: the wait is one)
            assert envelope._done is not None  # (a call's envelope has one)
            await envelope._done.wait()
        except BaseException:
            envelope.withdrawn = True
            raise
        finally:
            self._pending.discard(envelope)
        if envelope._error is not None:
            raise envelope._error
        return envelope._value

    async def _post(self, envelope: Envelope[M]) -> bool:
        """Deliver ``envelope``, waiting for room while the mailbox is full;
        True when it went at once, without a schedule point (the caller owes
        one)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._delivered(envelope):
            return True
        if self._blocked is None:
            self._blocked = {}
        task = trio.lowlevel.current_task()
        self._blocked[task] = envelope

        def abort(_: object) -> trio.lowlevel.Abort:
            assert self._blocked is not None  # (kept while a task waits in it)
            del self._blocked[task]
            return trio.lowlevel.Abort.SUCCEEDED

        # Woken with room made for it (its envelope already queued), or
        # with MailboxClosed.
        await trio.lowlevel.wait_task_rescheduled(abort)
        return False

    def _delivered(self, envelope: Envelope[M]) -> bool:
        """Deliver ``envelope`` if there is room (False when full);
        ``MailboxClosed`` once closed."""
        self._check_open()
        if len(self._queue) >= self._capacity or self._blocked:  # senders already waiting go first
            return False
        if self._reader is not None:
            # Handed straight to the waiting reader.
            trio.lowlevel.reschedule(self._reader, outcome.Value(envelope))
            self._reader = None
        else:
            self._queue.append(envelope)
        return True

    def _closed_error(self) -> MailboxClosed:
        return MailboxClosed(f"{self.name} is closed")

    def _check_open(self) -> None:
        if self._closed:
            raise self._closed_error()

    async def receive(self) -> Envelope[M]:
        """The next envelope not withdrawn; ``MailboxClosed`` once the
        mailbox is closed."""
        await trio.lowlevel.checkpoint_if_cancelled()
        envelope = self.receive_nowait()
        if envelope is not None:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return envelope
        while True:
            self._check_open()
            if self._reader is not None:
                raise trio.BusyResourceError(f"another task already reads {self.name}")
            self._reader = trio.lowlevel.current_task()
            delivered: Envelope[M] = await trio.lowlevel.wait_task_rescheduled(self._abort_receive)
            if not delivered.withdrawn:
                return delivered

    def _abort_receive(self, _: object) -> trio.lowlevel.Abort:
        self._reader = None
        return trio.lowlevel.Abort.SUCCEEDED

    def __aiter__(self) -> Mailbox[M]:
        """The actor's loop: ``async for envelope in mailbox``, until closed."""
        return self

    async def __anext__(self) -> Envelope[M]:
        try:
            return await self.receive()
        except MailboxClosed:
            raise StopAsyncIteration from None

    def receive_nowait(self) -> Envelope[M] | None:
        """The next envelope not withdrawn, or None when none waits."""
        queue = self._queue
        while queue:
            envelope = queue.pop(0)
            if self._blocked:
                # The first waiting sender's envelope takes the room made.
                task, waiting = next(iter(self._blocked.items()))
                del self._blocked[task]
                queue.append(waiting)
                trio.lowlevel.reschedule(task)
            if not envelope.withdrawn:
                return envelope
        return None

    def close(self) -> None:
        """Stop accepting messages, and fail every call still waiting."""
        if self._closed:
            return
        self._closed = True
        for task in self._blocked or ():
            trio.lowlevel.reschedule(task, outcome.Error(self._closed_error()))
        self._blocked = None
        if self._reader is not None:
            trio.lowlevel.reschedule(self._reader, outcome.Error(self._closed_error()))
            self._reader = None
        stopped = ActorStopped(f"{self.name}: the actor stopped")
        for envelope in list(self._pending or ()):
            envelope.fail(stopped)
        # What was queued but never read is answered the same way.
        for envelope in self._queue:
            envelope.fail(stopped)
        self._queue.clear()
