"""The model-stream actor: one model request, streamed in a task of its own.

The actor runs the adapter's stream and folds each event into the live
message as it arrives (publishing it to the agent's subscribers); the agent
waits for the actor to finish and gets back the error the stream ended with,
if any. Folding in the streaming task costs no task switch per event, and a
cancel closes the stream (and its HTTP connection) in the task that opened it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing

import trio

from ..models import Model, ModelRequest, ProviderError
from ..models.events import StreamError, StreamEvent

log = logging.getLogger("agentrio")


async def _stream(
    model: Model,
    request: ModelRequest,
    on_event: Callable[[StreamEvent], None],
    observe: Callable[[StreamEvent], Awaitable[None]] | None,
) -> ProviderError | None:
    try:
        async with aclosing(model.stream(request)) as events:
            async for event in events:
                if isinstance(event, StreamError):
                    return event.error
                on_event(event)
                if observe is not None:
                    await observe(event)
    except ProviderError as error:
        return error
    except Exception as exc:
        log.exception("model adapter %r failed", model)
        return ProviderError(type="adapter_error", message=f"{type(exc).__name__}: {exc}")
    return None


async def stream_model(
    model: Model,
    request: ModelRequest,
    on_event: Callable[[StreamEvent], None],
    observe: Callable[[StreamEvent], Awaitable[None]] | None = None,
) -> ProviderError | None:
    """Stream one request, passing each event to ``on_event`` and, when
    given, to the async ``observe``; returns the error the stream ended
    with, or None when it ended normally."""
    outcome: list[ProviderError | None] = []

    async def actor() -> None:
        outcome.append(await _stream(model, request, on_event, observe))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor)
    return outcome[0]
