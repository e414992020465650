"""The model-stream actor: one model request, streamed in a task of its own.

The actor runs the adapter's stream and posts each event into a bounded
buffer that the activity reads, then a final ``StreamEnded`` with the error
the stream ended with, if any. A slow reader makes the actor wait (the HTTP
stream is read no faster than the agent folds it), and a cancel closes the
stream, and its connection, in the task that opened it.

The actor is a task of the agent's nursery, like the agent's tool workers,
not of a nursery of its own: a nursery costs its opening and, on exit, a
task switch, per request. ``stream_model`` still bounds the actor's life:
it returns only once the actor's task has ended, cancelling it first when
the reader leaves early.

Handing over costs no task switch while there is room: the actor posts
without waiting until its buffer is full, and the activity takes every
event that waits before it waits itself, so a burst of events (a chunk of
the HTTP stream holds many) crosses in one switch, not three an event.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import aclosing

import attrs
import trio

from ..mailbox.waiter import Waiter
from ..models import Model, ModelRequest, ProviderError
from ..models.events import StreamError, StreamEvent

log = logging.getLogger("agentrio")

#: Stream events that may wait for the activity before the actor waits.
STREAM_MAILBOX_CAPACITY = 64


@attrs.frozen
class StreamEnded:
    """The last message of a stream: None when it ended normally."""

    error: ProviderError | None


class _StreamActor:
    """One request's actor: its task, its cancel scope, the events it has
    posted and the activity has not taken yet, and whether its task has
    ended (``join`` waits for that).

    The hand-off is a deque and the two parked tasks, not a ``Mailbox``: a
    stream is one-way, with one writer and one reader, so it needs neither
    envelopes nor replies, and each delta crosses as one append and one pop.
    At most ``STREAM_MAILBOX_CAPACITY`` events wait: the actor posts without
    waiting until then, and waits for the reader to take one after that."""

    __slots__ = ("_ended", "_joined", "_reader", "_scope", "_writer", "items")

    def __init__(self) -> None:
        #: Posted and not taken yet; ends with a ``StreamEnded``.
        self.items: deque[StreamEvent | StreamEnded] = deque()
        #: Where the reader waits for an event, and the actor for room.
        self._reader = Waiter()
        self._writer = Waiter()
        self._scope = trio.CancelScope()
        self._ended = False
        #: Set when the task ends, made only when someone waits for it.
        self._joined: trio.Event | None = None

    async def run(self, model: Model, request: ModelRequest) -> None:
        try:
            with self._scope:
                await self._stream(model, request)
        finally:
            self._ended = True
            if self._joined is not None:
                self._joined.set()

    async def _stream(self, model: Model, request: ModelRequest) -> None:
        error = None
        try:
            async with aclosing(model.stream(request)) as events:
                async for event in events:
                    if isinstance(event, StreamError):
                        error = event.error
                        break
                    await self._post(event)
        except ProviderError as exc:
            error = exc
        except Exception as exc:
            log.exception("model adapter %r failed", model)
            error = ProviderError(type="adapter_error", message=f"{type(exc).__name__}: {exc}")
        await self._post(StreamEnded(error))

    async def _post(self, item: StreamEvent | StreamEnded) -> None:
        """Post without a task switch while there is room; wait when full."""
        items = self.items
        items.append(item)
        self._reader.wake()
        if len(items) >= STREAM_MAILBOX_CAPACITY:
            await self._writer.wait()

    async def read(
        self,
        on_event: Callable[[StreamEvent], None],
        observe: Callable[[StreamEvent], Awaitable[None]] | None,
    ) -> ProviderError | None:
        """Take each event the actor posts, in order, until its
        ``StreamEnded``; returns the error the stream ended with. It waits
        (a checkpoint) only when nothing is posted; an actor waiting for
        room gets it as soon as an event is taken."""
        items = self.items
        while True:
            while items:
                self._writer.wake()
                item = items.popleft()
                if isinstance(item, StreamEnded):
                    return item.error
                on_event(item)
                if observe is not None:
                    await observe(item)
            await self._reader.wait()

    async def join(self) -> None:
        """Cancel the actor unless its task has ended, and wait until it has,
        whatever cancel the caller is under."""
        if self._ended:
            return
        self._scope.cancel()
        self._joined = trio.Event()
        with trio.CancelScope(shield=True):
            await self._joined.wait()


async def stream_model(
    model: Model,
    request: ModelRequest,
    on_event: Callable[[StreamEvent], None],
    observe: Callable[[StreamEvent], Awaitable[None]] | None = None,
    *,
    start: Callable[..., None],
) -> ProviderError | None:
    """Stream one request through a model-stream actor started with
    ``start`` (the agent's nursery's ``start_soon``), passing each event to
    ``on_event`` and, when given, to the async ``observe``; returns the error
    the stream ended with, or None when it ended normally. Returns or raises
    only once the actor's task has ended."""
    actor = _StreamActor()
    start(actor.run, model, request)
    try:
        return await actor.read(on_event, observe)
    finally:
        await actor.join()
