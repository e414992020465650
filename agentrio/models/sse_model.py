"""What every HTTP model adapter shares: options, transport, SSE decoding.

A concrete adapter says where to send a request (``path``, ``headers``),
what to send (``request_body``, a pure function of the request) and how to
read the answer (``new_mapper``, a ``StreamMapper`` from server-sent events
to normalized events; ``mapper_for`` when that depends on the request). ``stream`` does the rest and maps every failure to a
``ProviderError``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Protocol

import attrs
import httpx

from .. import tracing
from .events import StreamEvent
from .http import client_for_request
from .provider_errors import connection_error, http_error, provider_error
from .request import ModelRequest
from .retry import RetryPolicy
from .sse import ServerSentEvent, SSEDecoder

option = functools.partial(attrs.field, kw_only=True)


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
        return json.loads(sse.data)
    except ValueError:
        raise provider_error(
            {"type": "invalid_response", "message": f"not JSON: {sse.data[:200]!r}"}
        ) from None


@attrs.define
class SSEModel:
    model: str
    base_url: str = option()
    api_key: str | None = option(default=None, repr=False)
    #: A client to use instead of the Runtime's shared one.
    http_client: httpx.AsyncClient | None = option(default=None, repr=False)
    max_tokens: int | None = option(default=None)
    temperature: float | None = option(default=None)
    extra_headers: Mapping[str, str] = option(factory=dict)
    #: Merged last into every request body, for options this adapter does not name.
    extra_body: Mapping[str, Any] = option(factory=dict)
    retry_policy: RetryPolicy = option(factory=RetryPolicy)
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

    def mapper_for(self, request: ModelRequest) -> StreamMapper:
        """The mapper reading the answer to ``request``: ``new_mapper()``,
        unless how the request asked for something changes how to read it."""
        return self.new_mapper()

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + self.path

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        return {**self.request_body(request), **self.extra_body}

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        body = self._body(request)
        headers = {
            "accept": "text/event-stream",
            "content-type": "application/json",
            **self.headers(),
            **self.extra_headers,
        }
        headers.update(tracing.provider_headers())
        mapper = self.mapper_for(request)
        async with client_for_request(self.http_client) as client:
            try:
                async with client.stream("POST", self.url, json=body, headers=headers) as response:
                    await _raise_for_response(response)
                    decoder = SSEDecoder()
                    try:
                        async for chunk in response.aiter_bytes():
                            for sse in decoder.feed(chunk):
                                for event in mapper.feed(sse):
                                    yield event
                        for sse in decoder.close():
                            for event in mapper.feed(sse):
                                yield event
                        for event in mapper.finish():
                            yield event
                    except (KeyError, TypeError, AttributeError) as exc:
                        # A payload without the fields its type promises.
                        raise provider_error(
                            {"type": "invalid_response", "message": f"unexpected event: {exc!r}"}
                        ) from exc
            except httpx.TransportError as exc:
                raise connection_error(f"{type(exc).__name__}: {exc}") from exc


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
