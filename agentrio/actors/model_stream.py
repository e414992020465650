"""The model-stream actor: one model request, streamed in a task of its own.

The actor runs the adapter's stream and posts each event into a bounded
mailbox that the activity reads, then a final ``StreamEnded`` with the error
the stream ended with, if any. A slow reader makes the actor wait (the HTTP
stream is read no faster than the agent folds it), and a cancel closes the
stream, and its connection, in the task that opened it.

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


async def stream_model(
    model: Model,
    request: ModelRequest,
    on_event: Callable[[StreamEvent], None],
    observe: Callable[[StreamEvent], Awaitable[None]] | None = None,
) -> ProviderError | None:
    """Stream one request through a model-stream actor, passing each event to
    ``on_event`` and, when given, to the async ``observe``; returns the error
    the stream ended with, or None when it ended normally."""
    inbox: Mailbox[StreamEvent | StreamEnded] = Mailbox(STREAM_MAILBOX_CAPACITY, "model stream")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_stream, model, request, inbox)
        while True:
            envelope = inbox.receive_nowait() or await inbox.receive()
            item = envelope.message
            if isinstance(item, StreamEnded):
                return item.error
            on_event(item)
            if observe is not None:
                await observe(item)
