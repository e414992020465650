"""ACP over WebSocket at ``/acp`` (one JSON-RPC message per text frame),
and the console's static files at ``/``, on one port.

Each connection's request head is read here (h11) before anything else, so
a wrong token (401) or a foreign ``Origin`` (403) is refused before the
upgrade; the head is then handed, untouched, to trio-websocket.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import mimetypes
import os
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import attrs
import h11
import trio
import trio_websocket
import wsproto
import wsproto.events
from wsproto.connection import ConnectionState

from .acp.jsonrpc import STALL_TIMEOUT
from .acp.outbox import Budget
from .acp.server import AcpConnection
from .acp.sessions import SessionHub

log = logging.getLogger("agentrio.gateway")

#: Largest request head, and largest WebSocket message (closed with 1009 above it).
MAX_HEAD = 64 * 1024
MAX_MESSAGE = 4 * 1024 * 1024
#: Close code for a client that reads too slowly: it may reconnect and resync.
CLOSE_LAGGING = 1013
#: Seconds a closing handshake may take before the socket is simply closed.
CLOSE_TIMEOUT = 2.0

CONSOLE_FILES = {
    "/": "index.html",
    "/index.html": "index.html",
    "/console.css": "console.css",
    "/console.js": "console.js",
}
SECURITY_HEADERS = [
    (
        "content-security-policy",
        "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
]


#: Fewest characters a bearer token may have.
MIN_TOKEN = 16


def new_token() -> str:
    return secrets.token_urlsafe(24)


def stored_token(folder: Path) -> str:
    """The token kept in ``folder`` (file ``serve-token``, readable by its
    owner only), made there on first use: a console bookmarked with it
    works across restarts."""
    path = folder / "serve-token"
    with suppress(FileNotFoundError):
        if len(token := path.read_text().strip()) >= MIN_TOKEN:
            return token
    folder.mkdir(parents=True, exist_ok=True)
    token = new_token()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token + "\n")
    return token


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (not reachable from a network)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@attrs.frozen
class WebSocketOptions:
    token: str
    max_message: int = MAX_MESSAGE
    #: Bytes waiting for one client before it is dropped (after merging, see ``Outbox``).
    queue_bytes: int = 64 * 1024 * 1024
    #: Bytes waiting for all clients together before the one with the most is dropped.
    budget_bytes: int = 256 * 1024 * 1024
    #: Seconds a message may take to leave before its client is dropped as stalled.
    stall_timeout: float = STALL_TIMEOUT
    #: Seconds a client may take to send its request head.
    head_timeout: float = 5.0
    #: Connections still to send their request head, from one address and
    #: in all: past either, the oldest of them is closed to make room.
    pending_per_peer: int = 32
    pending_total: int = 128


class _Handshakes:
    """Connections that have yet to send their request head. Past
    ``per_peer`` from one address, or ``total`` in all, the oldest pending
    one (of that address, or of all) is let go: idle sockets cannot hold
    the server's descriptors, and a new client always gets its turn."""

    def __init__(self, per_peer: int, total: int) -> None:
        self._per_peer = per_peer
        self._total = total
        self._all: dict[trio.CancelScope, str] = {}
        self._by_peer: dict[str, dict[trio.CancelScope, None]] = {}

    @contextmanager
    def pending(self, peer: str) -> Iterator[None]:
        """Where one connection's head is read: cancelled (and left) if the
        connection is let go to make room."""
        scope = trio.CancelScope()
        self._all[scope] = peer
        self._by_peer.setdefault(peer, {})[scope] = None
        if len(self._by_peer[peer]) > self._per_peer:
            self._let_go(next(iter(self._by_peer[peer])))
        if len(self._all) > self._total:
            self._let_go(next(iter(self._all)))
        try:
            with scope:
                yield
        finally:
            if scope in self._all:
                self._forget(scope)

    def _let_go(self, scope: trio.CancelScope) -> None:
        self._forget(scope)  # at once: the next to come must not pick it again
        scope.cancel()

    def _forget(self, scope: trio.CancelScope) -> None:
        peer = self._all.pop(scope)
        del self._by_peer[peer][scope]
        if not self._by_peer[peer]:
            del self._by_peer[peer]


class _Replayed(trio.abc.Stream):
    """A stream whose first bytes are the ones already read from it."""

    def __init__(self, stream: trio.abc.Stream, head: bytes) -> None:
        self._stream = stream
        self._head = head

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._head:
            data, self._head = self._head, b""
            return data
        return bytes(await self._stream.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self._stream.aclose()


class _Connection(trio_websocket.WebSocketConnection):
    """trio-websocket's server connection, except that a frame it refuses
    (a text frame that is not UTF-8: 1007) is answered with a close frame
    saying why before the socket closes; trio-websocket only closes it."""

    async def _handle_close_connection_event(self, event: wsproto.events.CloseConnection) -> None:
        if self._wsproto.state is ConnectionState.OPEN:  # found here, not sent by the client
            with suppress(trio_websocket.ConnectionClosed):
                await self._send(event)
        await super()._handle_close_connection_event(event)


async def _accept(nursery: trio.Nursery, stream: trio.abc.Stream, max_message: int) -> _Connection:
    """``trio_websocket.wrap_server_stream`` with ``_Connection``, accepted."""
    connection = _Connection(
        stream,
        wsproto.WSConnection(wsproto.ConnectionType.SERVER),
        message_queue_size=8,
        max_message_size=max_message,
    )
    nursery.start_soon(connection._reader_task)
    request = await connection._get_request()
    await request.accept()
    return connection


class WebSocketTransport:
    def __init__(self, ws: trio_websocket.WebSocketConnection) -> None:
        self._ws = ws

    async def receive(self) -> str | None:
        while True:
            try:
                message = await self._ws.get_message()
            except trio_websocket.ConnectionClosed:
                return None
            if isinstance(message, str):
                return message  # binary frames carry nothing in ACP

    async def send(self, text: str) -> None:
        try:
            await self._ws.send_message(text)
        except trio_websocket.ConnectionClosed:
            raise trio.BrokenResourceError("the WebSocket closed") from None


async def serve_websocket(
    hub: SessionHub,
    options: WebSocketOptions,
    host: str,
    port: int,
    *,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; ``task_status`` gets the listeners (for the port)."""
    budget = Budget(options.budget_bytes)
    handshakes = _Handshakes(options.pending_per_peer, options.pending_total)
    await trio.serve_tcp(
        partial(_connection, hub, options, budget, handshakes), port, host=host, task_status=task_status
    )


async def _connection(
    hub: SessionHub,
    options: WebSocketOptions,
    budget: Budget,
    handshakes: _Handshakes,
    stream: trio.SocketStream,
) -> None:
    try:
        async with stream:
            head, request = b"", None
            # A client that never finishes its head, or that others crowd out, is let go.
            with handshakes.pending(_address(stream)), trio.move_on_after(options.head_timeout):
                head, request = await _read_head(stream)
            if request is None:
                return
            target = urlsplit(request.target.decode("latin-1"))
            headers = {
                name.decode("latin-1").lower(): value.decode("latin-1") for name, value in request.headers
            }
            if target.path == "/acp":
                await _acp(hub, options, budget, _Replayed(stream, head), target.query, headers)
            elif request.method in (b"GET", b"HEAD") and target.path in CONSOLE_FILES:
                await _file(stream, CONSOLE_FILES[target.path], head_only=request.method == b"HEAD")
            else:
                await _respond(stream, 404, "not found")
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
        pass  # the client went away or spoke nonsense: nothing to tell it
    except Exception:
        log.exception("serving a connection failed")  # that connection only, never the server


def _address(stream: trio.SocketStream) -> str:
    try:
        return str(stream.socket.getpeername()[0])
    except OSError:  # gone already
        return ""


async def _read_head(stream: trio.SocketStream) -> tuple[bytes, h11.Request | None]:
    """The request head; (what came, None) when the client ends or garbles it."""
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    head = bytearray()
    while True:
        event = connection.next_event()
        if isinstance(event, h11.Request):
            return bytes(head), event
        if event is not h11.NEED_DATA:
            return bytes(head), None
        data = await stream.receive_some(65536)
        if not data:
            return bytes(head), None
        head += data
        connection.receive_data(data)


def _authorized(options: WebSocketOptions, query: str, headers: dict[str, str]) -> bool:
    scheme, _, given = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        given = (parse_qs(query).get("token") or [""])[0]
    return hmac.compare_digest(given.strip().encode(), options.token.encode())


def _same_origin(headers: dict[str, str]) -> bool:
    """Browsers always send ``Origin``: it must name this very server.
    Other clients (editors, scripts) send none."""
    origin = headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc == headers.get("host")


async def _acp(
    hub: SessionHub,
    options: WebSocketOptions,
    budget: Budget,
    stream: _Replayed,
    query: str,
    headers: dict[str, str],
) -> None:
    if not _same_origin(headers):
        await _respond(stream, 403, "foreign origin")
        return
    if not _authorized(options, query, headers):
        await _respond(stream, 401, "a valid token is required", [("www-authenticate", "Bearer")])
        return
    async with trio.open_nursery() as nursery:
        ws = await _accept(nursery, stream, options.max_message)
        connection = AcpConnection(
            hub,
            WebSocketTransport(ws),
            queue_bytes=options.queue_bytes,
            stall_timeout=options.stall_timeout,
            budget=budget,
        )
        await connection.run()
        with trio.move_on_after(CLOSE_TIMEOUT):
            if connection.peer.dropped is not None:
                await ws.aclose(CLOSE_LAGGING, "too slow: reconnect and session/load to resync")
            else:
                await ws.aclose()
        nursery.cancel_scope.cancel()


async def _file(stream: trio.abc.Stream, name: str, *, head_only: bool) -> None:
    body = (resources.files(__package__) / "console" / name).read_bytes()
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if content_type.startswith("text/") or content_type.endswith("javascript"):
        content_type += "; charset=utf-8"
    await _send(
        stream,
        200,
        b"" if head_only else body,
        [("content-type", content_type), *SECURITY_HEADERS],
        length=len(body),
    )


async def _respond(
    stream: trio.abc.Stream, status: int, text: str, headers: Sequence[tuple[str, str]] = ()
) -> None:
    await _send(
        stream, status, (text + "\n").encode(), [("content-type", "text/plain; charset=utf-8"), *headers]
    )


async def _send(
    stream: trio.abc.Stream,
    status: int,
    body: bytes,
    headers: list[tuple[str, str]],
    length: int | None = None,
) -> None:
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}"]
    lines += [f"{name}: {value}" for name, value in headers]
    lines += [f"content-length: {len(body) if length is None else length}", "connection: close", "", ""]
    await stream.send_all("\r\n".join(lines).encode("latin-1") + body)
