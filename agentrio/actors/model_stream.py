"""The model-stream actor: one model request, streamed into a mailbox.

The adapter's stream runs in a task of its own and hands events to the agent
through a bounded channel, so a cancel closes the stream (and its HTTP
connection) in the task that opened it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing

import trio

from ..models import Model, ModelRequest, ProviderError
from ..models.events import StreamError, StreamEvent

log = logging.getLogger("agentrio")

#: Events buffered between the stream task and the agent.
STREAM_BUFFER = 64


async def _produce(
    model: Model, request: ModelRequest, send: trio.MemorySendChannel[StreamEvent]
) -> None:
    async with send:
        try:
            async with aclosing(model.stream(request)) as events:
                async for event in events:
                    try:
                        # The adapter's own awaits are the checkpoints; a
                        # second one per event would only add a task switch.
                        send.send_nowait(event)
                    except trio.WouldBlock:
                        await send.send(event)
            return
        except trio.BrokenResourceError:
            return  # the agent stopped listening
        except ProviderError as error:
            failure = error
        except Exception as exc:
            log.exception("model adapter %r failed", model)
            failure = ProviderError(type="adapter_error", message=f"{type(exc).__name__}: {exc}")
        await send.send(StreamError(failure))


async def stream_model(
    model: Model,
    request: ModelRequest,
    on_event: Callable[[StreamEvent], Awaitable[None]],
) -> ProviderError | None:
    """Stream one request, passing each event to ``on_event``; returns the
    error the stream ended with, or None when it ended normally."""
    send, receive = trio.open_memory_channel[StreamEvent](STREAM_BUFFER)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_produce, model, request, send)
        async with receive:
            async for event in receive:
                while True:
                    if isinstance(event, StreamError):
                        return event.error
                    await on_event(event)
                    try:  # take what is already buffered without a task switch each
                        event = receive.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
    return None
