"""A small HTTP/1.1 server on 127.0.0.1 that answers with scripted replies.

Built on ``trio.serve_tcp`` and h11 (which httpx already depends on), so the
adapters are tested through real sockets and a real httpx client.
"""

from __future__ import annotations

import json
from collections import deque
from functools import partial
from typing import Any

import attrs
import h11
import trio


@attrs.define
class Reply:
    status: int = 200
    content_type: str = "text/event-stream"
    #: The body, sent as one HTTP chunk per item.
    chunks: list[bytes] = attrs.field(factory=list)
    headers: list[tuple[str, str]] = attrs.field(factory=list)
    #: After the chunks, keep the response open until the client goes away.
    hang: bool = False
    #: After the chunks, close the connection without ending the body.
    drop: bool = False
    #: After the chunks, send this every ``every`` seconds until the client goes away.
    repeat: bytes = b""
    every: float = 1.0
    #: Seconds to wait before sending each chunk.
    pause: float = 0.0
    #: Seconds to wait before sending the response headers.
    headers_after: float = 0.0


def split(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)] or [b""]


@attrs.define
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@attrs.define
class LoopbackServer:
    replies: deque[Reply] = attrs.field(factory=deque)
    requests: list[ReceivedRequest] = attrs.field(factory=list)
    url: str = ""
    #: How many connections are open now, and how many were ever accepted.
    open_connections: int = 0
    accepted_connections: int = 0

    def reply(self, reply: Reply) -> None:
        self.replies.append(reply)

    async def handle(self, stream: trio.SocketStream) -> None:
        self.open_connections += 1
        self.accepted_connections += 1
        try:
            await self._serve(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
            pass
        finally:
            self.open_connections -= 1
            await stream.aclose()

    async def _serve(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            received = await read_request(conn, stream)
            if received is None:
                return
            self.requests.append(received)
            reply = self.replies.popleft()
            await trio.sleep(reply.headers_after)
            headers = [("content-type", reply.content_type), ("transfer-encoding", "chunked")]
            await stream.send_all(
                conn.send(h11.Response(status_code=reply.status, headers=headers + reply.headers))
            )
            for chunk in reply.chunks:
                await trio.sleep(reply.pause)
                if chunk:
                    await stream.send_all(conn.send(h11.Data(data=chunk)))
            while reply.repeat:
                await trio.sleep(reply.every)
                await stream.send_all(conn.send(h11.Data(data=reply.repeat)))
            if reply.hang:
                while await stream.receive_some(65536):
                    pass
                return
            if reply.drop:
                return
            await stream.send_all(conn.send(h11.EndOfMessage()))
            conn.start_next_cycle()


async def read_request(conn: h11.Connection, stream: trio.SocketStream) -> ReceivedRequest | None:
    """The next whole request on ``conn``, or None once the client closed."""
    request: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert request is not None
            return ReceivedRequest(
                request.method.decode(),
                request.target.decode(),
                {k.decode(): v.decode() for k, v in request.headers},
                bytes(body),
            )
        elif isinstance(event, h11.ConnectionClosed):
            return None


async def start_server(nursery: trio.Nursery) -> LoopbackServer:
    server = LoopbackServer()
    listeners = await nursery.start(partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    server.url = f"http://127.0.0.1:{port}"
    return server
