"""``ScriptedModel``: a model whose answers are written in advance."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from typing import TypeAlias

import trio

from .. import _callbacks
from ..messages import AssistantMessage, Text, Thinking, ToolCall
from .errors import ProviderError
from .events import (
    Done,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from .request import ModelRequest
from .validation import request_problems

Reply: TypeAlias = AssistantMessage | BaseException | Callable[[ModelRequest], object]


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def message_events(
    message: AssistantMessage, *, chunk_size: int = 8, model: str = "", provider: str = ""
) -> Iterator[StreamEvent]:
    """The stream a provider would send for ``message``: text in pieces of
    ``chunk_size`` characters, tool-call arguments as fragments of JSON."""
    yield StreamStart(model=message.model or model, provider=message.provider or provider)
    for index, part in enumerate(message.content):
        if isinstance(part, Text):
            yield TextStart(index)
            for piece in _chunks(part.text, chunk_size):
                yield TextDelta(index, piece)
            yield TextEnd(index)
        elif isinstance(part, Thinking):
            yield ThinkingStart(index, redacted=part.redacted)
            for piece in _chunks(part.text, chunk_size):
                yield ThinkingDelta(index, text=piece)
            if part.signature:
                yield ThinkingDelta(index, signature=part.signature)
            yield ThinkingEnd(index, id=part.id)
        elif isinstance(part, ToolCall):
            yield ToolCallStart(index, part.id, part.name)
            raw = part.raw_arguments if part.raw_arguments is not None else json.dumps(part.arguments)
            for piece in _chunks(raw, chunk_size):
                yield ToolCallDelta(index, piece)
            yield ToolCallEnd(index)
    yield Done(message.stop_reason, message.usage)


class ScriptedModel:
    """Answers each request with the next reply of a script.

    A reply is an ``AssistantMessage`` (streamed in small chunks), an
    exception (raised for that request, as a provider error would be) or a
    callable ``reply(request)``, sync or async, returning one of those. With
    ``strict=True`` a request a real provider would reject fails with a 400
    ``ProviderError``. ``requests`` records every request received.

    The stream yields to trio before every ``yield_every``-th event, as an
    HTTP stream whose reads each bring that many events: 1 (the default)
    lets other tasks run between any two events; 0 hands a whole reply over
    in one burst, the way a reply that arrived in one read is parsed.
    """

    def __init__(
        self,
        replies: Iterable[Reply],
        *,
        strict: bool = True,
        chunk_size: int = 8,
        model: str = "scripted",
        provider: str = "scripted",
        yield_every: int = 1,
    ) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        if not isinstance(yield_every, int) or yield_every < 0:
            raise ValueError(f"yield_every must be an int of at least 0, got {yield_every!r}")
        self._replies: deque[Reply] = deque(replies)
        self.strict = strict
        self.chunk_size = chunk_size
        self.yield_every = yield_every
        self.model = model
        self.provider = provider
        self.requests: list[ModelRequest] = []

    @property
    def remaining(self) -> int:
        """How many replies are left."""
        return len(self._replies)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        self.requests.append(request)
        if self.strict and (problems := request_problems(request)):
            raise ProviderError(400, "invalid_request_error", "; ".join(problems))
        if not self._replies:
            raise ProviderError(
                None,
                "script_exhausted",
                f"ScriptedModel has no reply left for request #{len(self.requests)}",
            )
        reply = self._replies.popleft()
        if callable(reply):
            reply = await _callbacks.call(reply, request)
        if isinstance(reply, BaseException):
            raise reply
        if not isinstance(reply, AssistantMessage):
            raise TypeError(f"a scripted reply must be an AssistantMessage, got {reply!r}")
        every = self.yield_every
        events = message_events(reply, chunk_size=self.chunk_size, model=self.model, provider=self.provider)
        if not every:
            await trio.lowlevel.checkpoint()
        for count, event in enumerate(events):
            if every and count % every == 0:
                await trio.lowlevel.checkpoint()
            yield event
