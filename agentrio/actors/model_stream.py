"""One model request, streamed into the activity that made it.

The adapter's stream is read in the task of the activity that asked for it:
each event is folded (``on_event``, then the async ``observe``) before the
next one is read, so the HTTP stream is read no faster than the agent folds
it, without a mailbox between the two. A separate task and a bounded
mailbox per request would buy nothing more: the stream has no state of its
own that another task touches, and the reader waits for each event either
way. What the actor boundary gave is kept:

* a cancel closes the stream, and its connection, in the task that opened
  it (the activity's, whose scope the cancel reaches);
* whatever the adapter raises becomes the request's error, a
  ``ProviderError``, never the activity's failure; an exception the reader
  raises itself (a failing ``observe`` hook) is its own, and goes on up.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing

from ..models import Model, ModelRequest, ProviderError
from ..models.events import StreamError, StreamEvent

log = logging.getLogger("agentrio")


async def stream_model(
    model: Model,
    request: ModelRequest,
    on_event: Callable[[StreamEvent], None],
    observe: Callable[[StreamEvent], Awaitable[None]] | None = None,
) -> ProviderError | None:
    """Stream one request, passing each event to ``on_event`` and, when
    given, to the async ``observe``; returns the error the stream ended
    with, or None when it ended normally."""
    reading = True  # False while the reader folds an event: its errors are its own
    try:
        async with aclosing(model.stream(request)) as events:
            async for event in events:
                if isinstance(event, StreamError):
                    return event.error
                reading = False
                on_event(event)
                if observe is not None:
                    await observe(event)
                reading = True
    except ProviderError as exc:
        if not reading:
            raise
        return exc
    except Exception as exc:
        if not reading:
            raise
        log.exception("model adapter %r failed", model)
        return ProviderError(type="adapter_error", message=f"{type(exc).__name__}: {exc}")
    return None
