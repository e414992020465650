"""Remote MCP servers over HTTP: ``mcp_server(url=..., headers=...)``.

The connection is the same supervised actor as a stdio server's (see
``agentrio.tools.mcp``); only the way it reaches the server differs. It
speaks streamable HTTP with the official SDK's client. The first time it
connects it asks which transport the URL serves, as the MCP specification
says a client should: a server that answers a POST with 404 or 405 is taken
for one of the older SSE transport, and reached with the SDK's SSE client.

A server that goes away (its process killed, the network cut) fails the
calls in flight with an error result, since whether they took effect is
unknown; the connection then waits for the server to accept connections
again (backing off up to a second between tries, for at most
``startup_timeout`` seconds) and starts a new MCP session, counted as a
restart. A request that finds the server refusing connections was not
delivered: it is sent again, with the same back-off and for as long. A call
sent on a session the server no longer knows (it restarted while we were
idle) never reached it either, and is sent again on a new session.

``headers`` go with every request and nowhere else: they are kept out of
names, errors, events and logs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx2
import trio

try:
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client
except ModuleNotFoundError as missing:
    raise ModuleNotFoundError(
        "agentrio.tools.mcp_http needs the MCP SDK: pip install 'agentrio[mcp]'", name=missing.name
    ) from missing

from ..supervision import OnEvent
from .mcp import ServerDidNotStart, ServerExited, ToolServer, Transport, hosted
from .tool import ExecutionMode

#: The SDK's own defaults: 30 s to connect or write, and 5 min of silence
#: on a response stream (a call's progress and answer come on it).
TIMEOUT = httpx2.Timeout(30.0, read=300.0)
#: Longest wait between two tries to reach a server that went away.
MAX_BACKOFF = 1.0
#: Statuses that tell an endpoint of the older SSE transport (it takes no POST).
SSE_STATUSES = (404, 405)

T = TypeVar("T")


class _HttpConnection:
    """Opens the streams of one connection to ``url``; remembers which
    transport the URL serves once it has asked."""

    def __init__(self, name: str, url: str, headers: Mapping[str, str], startup_timeout: float) -> None:
        self._name = name
        self._url = url
        self._headers = dict(headers)
        self._startup_timeout = startup_timeout
        self._sse: bool | None = None  # None: not asked yet
        self._opened = False
        #: The server answered 404 to a request on the current session: it
        #: no longer knows the session, so it ran none of its requests.
        self._forgotten = False

    def __repr__(self) -> str:  # the headers may hold credentials
        return f"<HTTP connection to MCP server {self._name!r}>"

    def transport(self) -> Transport:
        return Transport(
            self.open,
            lost=(
                "lost its connection during the call, so whether the call took effect is unknown; "
                "it is reconnected for later calls"
            ),
            ended="went away",
            undelivered=lambda error: self._forgotten,
        )

    @asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Any, Any]]:
        await self._reachable(wait=self._opened)
        self._opened = True
        self._forgotten = False
        hooks = {"response": [self._on_response]}
        patient = _Patient(self._startup_timeout)
        async with httpx2.AsyncClient(
            headers=self._headers, timeout=TIMEOUT, event_hooks=hooks, transport=patient
        ) as client:
            if self._sse is None:
                self._sse = await self._serves_sse(client)
            try:
                if self._sse:
                    async with sse_client(self._url, headers=self._headers) as streams:
                        yield streams
                else:
                    async with streamable_http_client(self._url, http_client=client) as streams:
                        yield streams
            except* (httpx2.TransportError, httpx2.HTTPStatusError) as group:
                raise ServerExited(
                    f"MCP server {self._name!r} went away: {_describe(group.exceptions[0])}"
                ) from None

    async def _reachable(self, *, wait: bool) -> None:
        """Return once the server accepts a connection. Tried once for the
        first start (a wrong URL fails at once); after that, tried with
        back-off for up to ``startup_timeout`` seconds."""
        parts = urlsplit(self._url)
        port = parts.port or (443 if parts.scheme == "https" else 80)

        async def connect() -> None:
            await (await trio.open_tcp_stream(parts.hostname or "localhost", port)).aclose()

        try:
            await _with_backoff(connect, OSError, self._startup_timeout if wait else 0)
        except OSError as exc:
            within = f" within {self._startup_timeout:g} s" if wait else ""
            raise ServerDidNotStart(
                f"MCP server {self._name!r} did not start: cannot connect{within}: {exc.strerror or exc}"
            ) from None

    async def _on_response(self, response: httpx2.Response) -> None:
        if response.status_code == 404 and "mcp-session-id" in response.request.headers:
            self._forgotten = True

    async def _serves_sse(self, client: httpx2.AsyncClient) -> bool:
        """Whether the URL is an endpoint of the older SSE transport: a POST
        that opens no session (a ping) is refused there with 404 or 405."""
        ping = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
        accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        try:
            response = await client.post(self._url, json=ping, headers=accept)
        except httpx2.TransportError as exc:
            raise ServerDidNotStart(f"MCP server {self._name!r} did not start: {_describe(exc)}") from None
        return response.status_code in SSE_STATUSES


class _Patient(httpx2.AsyncBaseTransport):
    """HTTP that sends a message (a POST) again while the server refuses
    connections (it is restarting), with back-off, for up to ``patience``
    seconds: a message that could not connect was not delivered. A stream
    (a GET) is not waited for: the SDK tries to resume a broken one twice,
    and a call whose answer it cannot resume should fail now, not once the
    server is back."""

    def __init__(self, patience: float) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._patience = patience

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        send = partial(self._inner.handle_async_request, request)
        if request.method != "POST":
            return await send()
        return await _with_backoff(send, httpx2.ConnectError, self._patience)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _with_backoff(attempt: Callable[[], Awaitable[T]], errors: type[Exception], patience: float) -> T:
    """``attempt()``, tried again after each of ``errors`` (waiting 50 ms,
    then twice as long each time, up to ``MAX_BACKOFF``) for ``patience``
    seconds; then once more, whose error is raised."""
    delay = 0.05
    with trio.move_on_after(patience):
        while True:
            try:
                return await attempt()
            except errors:
                await trio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)
    return await attempt()


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


@asynccontextmanager
async def http_server(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    name: str | None = None,
    prefix: str = "",
    execution_mode: ExecutionMode | None = None,
    max_restarts: int = 3,
    within: float = 60.0,
    startup_timeout: float = 30.0,
    call_timeout: float | None = None,
    on_event: OnEvent | None = None,
) -> AsyncIterator[ToolServer]:
    """The MCP server at ``url`` for the block (``mcp_server(url=...)``
    documents the options). ``name`` defaults to the URL's host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"an MCP server's url must be http:// or https:// with a host, got {url!r}")
    name = name or parts.hostname
    connection = _HttpConnection(name, url, headers or {}, startup_timeout)
    server = ToolServer(
        name,
        connection.transport(),
        prefix=prefix,
        execution_mode=execution_mode,
        startup_timeout=startup_timeout,
        call_timeout=call_timeout,
    )
    async with hosted(server, max_restarts, within, on_event):
        yield server
