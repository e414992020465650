"""The model-stream actor: one model request, streamed in a task of its own.

The actor runs the adapter's stream and posts each event into a bounded
mailbox that the activity reads, then a final ``StreamEnded`` with the error
the stream ended with, if any. A slow reader makes the actor wait (the HTTP
stream is read no faster than the agent folds it), and a cancel closes the
stream, and its connection, in the task that opened it.

The actor is a task of the agent's nursery, like the agent's tool workers,
not of a nursery of its own: a nursery costs its opening and, on exit, a
task switch, per request. ``stream_model`` still bounds the actor's life:
it returns only once the actor's task has ended, cancelling it first when
the reader leaves early.

Handing over costs no task switch while there is room: the actor posts
without waiting until the mailbox is full, and the activity takes every
event that waits before it waits itself, so a burst of events (a chunk of
the HTTP stream holds many) crosses in one switch, not three an event.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing

import attrs
import trio

from ..mailbox import Mailbox
from ..models import Model, ModelRequest, ProviderError
from ..models.events import StreamError, StreamEvent

log = logging.getLogger("agentrio")

#: Stream events that may wait for the activity before the actor waits.
STREAM_MAILBOX_CAPACITY = 64


@attrs.frozen
class StreamEnded:
    """The last message of a stream: None when it ended normally."""

    error: ProviderError | None


async def _stream(model: Model, request: ModelRequest, outbox: Mailbox[StreamEvent | StreamEnded]) -> None:
    error = None
    try:
        async with aclosing(model.stream(request)) as events:
            async for event in events:
                if isinstance(event, StreamError):
                    error = event.error
                    break
                await _post(outbox, event)
    except ProviderError as exc:
        error = exc
    except Exception as exc:
        log.exception("model adapter %r failed", model)
        error = ProviderError(type="adapter_error", message=f"{type(exc).__name__}: {exc}")
    await _post(outbox, StreamEnded(error))


async def _post(outbox: Mailbox[StreamEvent | StreamEnded], item: StreamEvent | StreamEnded) -> None:
    """Post without a task switch while there is room; wait when full."""
    try:
        outbox.send_nowait(item)
    except trio.WouldBlock:
        await outbox.send(item)


class _StreamActor:
    """One request's actor: its task, its cancel scope, and whether its task
    has ended (``join`` waits for that)."""

    __slots__ = ("_ended", "_joined", "_scope", "outbox")

    def __init__(self) -> None:
        self.outbox: Mailbox[StreamEvent | StreamEnded] = Mailbox(STREAM_MAILBOX_CAPACITY, "model stream")
        self._scope = trio.CancelScope()
        self._ended = False
        #: Set when the task ends, made only when someone waits for it.
        self._joined: trio.Event | None = None

    async def run(self, model: Model, request: ModelRequest) -> None:
        try:
            with self._scope:
                await _stream(model, request, self.outbox)
        finally:
            self._ended = True
            if self._joined is not None:
                self._joined.set()

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
    inbox = actor.outbox
    try:
        while True:
            envelope = inbox.receive_nowait() or await inbox.receive()
            item = envelope.message
            if isinstance(item, StreamEnded):
                return item.error
            on_event(item)
            if observe is not None:
                await observe(item)
    finally:
        await actor.join()
