"""What every HTTP model adapter shares: options, transport, SSE decoding.

A concrete adapter says where to send a request (``path``, ``headers``),
what to send (``request_body``, a pure function of the request) and how to
read the answer (``new_mapper``, a ``StreamMapper`` from server-sent events
to normalized events; ``mapper_for`` when that depends on the request). ``stream`` does the rest and maps every failure to a
``ProviderError``.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AsyncExitStack, aclosing
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

import attrs
import httpx
import trio

from .. import tracing
from .._json import loads
from .errors import ProviderError
from .events import StreamEvent
from .http import client_for_request
from .provider_errors import connection_error, http_error, provider_error, timeout_error
from .request import ModelRequest
from .retry import RetryPolicy
from .sse import MAX_EVENT_BYTES, ServerSentEvent, SSEDecoder

if TYPE_CHECKING:
    from .output import OutputSpec
from .stream_check import StreamChecker


def option(**kwargs: Any) -> Any:
    """An adapter's setting: an attrs field given by keyword only."""
    return attrs.field(kw_only=True, **kwargs)


DEFAULT_IDLE_TIMEOUT = 600.0
DEFAULT_ATTEMPT_TIMEOUT = 3600.0


def _positive_or_none(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{attribute.name} must be a positive number of seconds or None, got {value!r}")


def _at(timeout: float | None) -> float:
    return math.inf if timeout is None else trio.current_time() + timeout


class StreamMapper(Protocol):
    """Reads one provider's event stream. ``feed`` returns the normalized
    events an SSE event stands for, or raises ``ProviderError`` for an
    in-band error; ``finish`` returns the closing events once the body has
    ended, or raises ``ProviderError`` if it ended before the provider's
    final event."""

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]: ...

    def finish(self) -> list[StreamEvent]: ...


def parse_json(sse: ServerSentEvent) -> Any:
    try:
        return loads(sse.data)
    except (ValueError, RecursionError):
        raise provider_error(
            {"type": "invalid_response", "message": f"not JSON: {sse.data[:200]!r}"}
        ) from None


def token_count(value: Any) -> int:
    """A token count as a server wrote it: an int, or a whole float from a
    lax server; anything else (null, text, a negative number) counts 0."""
    if type(value) is float and value.is_integer():
        value = int(value)
    return value if type(value) is int and value > 0 else 0


@attrs.define
class SSEModel:
    model: str
    base_url: str = option()
    api_key: str | None = option(default=None, repr=False)
    #: A client to use instead of the Runtime's shared one.
    http_client: httpx.AsyncClient | None = option(default=None, repr=False)
    max_tokens: int | None = option(default=None)
    #: The model's context window in tokens, when known: an agent compacts
    #: its history before passing ``Limits.compact_at`` of it.
    context_window: int | None = option(default=None)
    temperature: float | None = option(default=None)
    extra_headers: Mapping[str, str] = option(factory=dict)
    #: Merged last into every request body, for options this adapter does not name.
    extra_body: Mapping[str, Any] = option(factory=dict)
    retry_policy: RetryPolicy = option(factory=RetryPolicy)
    #: The largest line or event the stream may send (``invalid_response`` past it).
    max_event_bytes: int = option(default=MAX_EVENT_BYTES, validator=attrs.validators.gt(0))
    #: Seconds the body may go without an event (comments and keep-alives
    #: do not count) before the attempt fails with a retryable ``timeout``.
    #: As long as the read timeout: a reasoning model may think for minutes
    #: before its first event. None: no limit.
    idle_timeout: float | None = option(default=DEFAULT_IDLE_TIMEOUT, validator=_positive_or_none)
    #: Seconds one attempt may take in all, from sending the request to the
    #: end of the answer (a long answer at a slow rate fits in an hour).
    #: None: no limit.
    attempt_timeout: float | None = option(default=DEFAULT_ATTEMPT_TIMEOUT, validator=_positive_or_none)
    #: Recorded on every message this adapter produces; thinking is replayed
    #: only to messages' own provider.
    provider: str = option()

    path: ClassVar[str]

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def new_mapper(self) -> StreamMapper:
        raise NotImplementedError

    def output_problem(self, output: OutputSpec) -> str | None:
        """Why this provider would refuse to be asked for ``output``, or
        None when it takes it."""
        return None

    def mapper_for(self, request: ModelRequest) -> StreamMapper:
        """The mapper reading the answer to ``request``: ``new_mapper()``,
        unless how the request asked for something changes how to read it."""
        return self.new_mapper()

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + self.path

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        return {**self.request_body(request), **self.extra_body}

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        body = self._body(request)
        headers = {
            "accept": "text/event-stream",
            "content-type": "application/json",
            **self.headers(),
            **self.extra_headers,
        }
        headers.update(tracing.provider_headers())
        mapper = self.mapper_for(request)
        end = _at(self.attempt_timeout)
        async with client_for_request(self.http_client) as client, AsyncExitStack() as stack:
            try:
                with trio.move_on_at(end):
                    response = await stack.enter_async_context(
                        client.stream("POST", self.url, content=_encode(body), headers=headers)
                    )
                    await _raise_for_response(response)
                if trio.current_time() >= end:
                    raise self._too_slow()
                decoder = SSEDecoder(max_event_bytes=self.max_event_bytes)
                checker = StreamChecker()
                chunks = await stack.enter_async_context(
                    aclosing(cast("AsyncGenerator[bytes, None]", response.aiter_bytes()))
                )
                try:
                    # Only reads that complete an event restart the idle
                    # clock: keep-alive comments cannot hold a stalled stream.
                    idle_end = _at(self.idle_timeout)
                    while (chunk := await self._next_chunk(chunks, idle_end, end)) is not None:
                        if events := decoder.feed(chunk):
                            idle_end = _at(self.idle_timeout)
                        for sse in events:
                            for event in checker.check(mapper.feed(sse)):
                                yield event
                    for sse in decoder.close():
                        for event in checker.check(mapper.feed(sse)):
                            yield event
                    for event in checker.check(mapper.finish()):
                        yield event
                    checker.finish()
                except (LookupError, TypeError, AttributeError, ValueError) as exc:
                    # A payload without the fields its type promises.
                    raise provider_error(
                        {"type": "invalid_response", "message": f"unexpected event: {exc!r}"}
                    ) from exc
            except httpx.TransportError as exc:
                raise connection_error(f"{type(exc).__name__}: {exc}") from exc

    async def _next_chunk(self, chunks: AsyncIterator[bytes], idle_end: float, end: float) -> bytes | None:
        """The next read of the body (None at its end), or a ``timeout``
        error at ``idle_end`` or the attempt's ``end``. The scope covers
        the read alone, never the consumer's code between events."""
        with trio.move_on_at(min(idle_end, end)):
            return await anext(chunks, None)
        if trio.current_time() >= end:
            raise self._too_slow()
        raise timeout_error(f"no event for {self.idle_timeout} s")

    def _too_slow(self) -> ProviderError:
        return timeout_error(f"the answer took longer than {self.attempt_timeout} s")


def _encode(body: dict[str, Any]) -> bytes:
    """The request body as UTF-8 JSON. A lone surrogate (a file name read
    with ``surrogateescape``, say) cannot be encoded: it is sent as ``?``
    rather than failing every later request of the session."""
    try:
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ProviderError(
            type="invalid_request", message=f"the request cannot be sent as JSON: {exc}"
        ) from None
    return text.encode("utf-8", "replace")


async def _raise_for_response(response: httpx.Response) -> None:
    """Raise the ``ProviderError`` of a failed or non-streaming answer."""
    if response.status_code >= 400:
        raise http_error(response.status_code, response.headers, await response.aread())
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("text/event-stream"):
        return
    # Some compatible servers answer a streaming request with a JSON error
    # and a 200 status.
    body = await response.aread()
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    if isinstance(payload, Mapping) and "error" in payload:
        raise provider_error(payload)
    raise provider_error(
        {
            "type": "invalid_response",
            "message": f"expected an event stream, got {content_type or 'no content type'}",
        }
    )
