"""The mailbox: how work reaches an actor."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import attrs
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
    - **Order**: messages are read in the order their senders got them in.
    - ``call`` returns the actor's reply, or raises the error the actor
      answered with. A caller cancelled while waiting withdraws its request:
      the actor skips a request it has not started, and a request it has
      started is answered into the void.
    - **Closing** (``close``): later senders get ``MailboxClosed`` at once;
      callers still waiting for a reply get ``ActorStopped``; messages still
      queued are failed the same way by ````close````.

    Senders may live in any task; only the owning actor reads.
    """

    def __init__(self, capacity: int, name: str = "mailbox") -> None:
        if capacity < 1:
            raise ValueError(f"a mailbox's capacity must be at least 1, got {capacity!r}")
        self.name = name
        self._send, self._receive = trio.open_memory_channel[Envelope[M]](capacity)
        self._pending: set[Envelope[M]] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return self._send.statistics().current_buffer_used

    async def send(self, message: M) -> None:
        """Post ``message`` without waiting for it to be handled (but waiting
        while the mailbox is full)."""
        await self._post(Envelope(message))

    def send_nowait(self, message: M) -> None:
        """Post ``message`` if there is room; ``trio.WouldBlock`` if full."""
        self._check_open()
        try:
            self._send.send_nowait(Envelope(message))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise MailboxClosed(f"{self.name} is closed") from None

    async def call(self, message: M) -> Any:
        """Post ``message`` and wait for the actor's reply."""
        envelope: Envelope[M] = Envelope(message, trio.Event())
        self._pending.add(envelope)
        try:
            await self._post(envelope)
            await envelope._done.wait()
        except BaseException:
            envelope.withdrawn = True
            raise
        finally:
            self._pending.discard(envelope)
        if envelope._error is not None:
            raise envelope._error
        return envelope._value

    async def _post(self, envelope: Envelope[M]) -> None:
        self._check_open()
        try:
            await self._send.send(envelope)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise MailboxClosed(f"{self.name} is closed") from None

    def _check_open(self) -> None:
        if self._closed:
            raise MailboxClosed(f"{self.name} is closed")

    async def receive(self) -> Envelope[M]:
        """The next envelope not withdrawn; ``MailboxClosed`` once the
        mailbox is closed and empty."""
        while True:
            try:
                envelope = await self._receive.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                raise MailboxClosed(f"{self.name} is closed") from None
            if not envelope.withdrawn:
                return envelope

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
        while True:
            try:
                envelope = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                return None
            if not envelope.withdrawn:
                return envelope

    def close(self) -> None:
        """Stop accepting messages, and fail every call still waiting."""
        if self._closed:
            return
        self._closed = True
        self._send.close()
        stopped = ActorStopped(f"{self.name}: the actor stopped")
        for envelope in list(self._pending):
            envelope.fail(stopped)
        # What was queued but never read is answered the same way.
        while True:
            try:
                envelope = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            envelope.fail(stopped)
