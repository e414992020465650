"""A fake OpenAI-compatible Chat Completions server on 127.0.0.1, for tests.

It answers ``POST …/chat/completions`` with scripted replies, streamed as a
real server streams them, so a client (an adapter in the test's own process,
or a subprocess such as ``python -m agentrio run --model openai:fake
--base-url URL``) is tested through real sockets. Built on ``trio.serve_tcp``
and h11 (which httpx already depends on); requests are read as the loopback
server of the adapter tests reads them (``tests/models/loopback.py``).

Use it from a trio test::

    async with trio.open_nursery() as nursery:
        server = await start_fake_openai(nursery, [
            AssistantMessage([Text("Reading it."), ToolCall("c1", "read", {"path": "a.txt"})]),
            AssistantMessage([Text("Done.")]),
        ])
        ...  # point the client at server.base_url, "http://127.0.0.1:PORT/v1"
        await server.wait_for(lambda: len(server.requests) == 2)
        assert server.requests[1].body["messages"][-1]["role"] == "tool"
        nursery.cancel_scope.cancel()

Replies, one per request, in order (``server.add(*replies)`` appends more):

- an ``AssistantMessage``: streamed as Chat Completions SSE — a role chunk;
  its text in pieces of ``chunk_size`` characters; each tool call as a
  header chunk (``index``, ``id``, ``name``) and then its arguments as
  fragments of JSON; a ``finish_reason`` chunk (``stop``, ``tool_calls`` or
  ``length`` from the message's ``stop_reason``); a usage chunk
  (``prompt_tokens`` = input + cache-read tokens, ``completion_tokens``,
  ``prompt_tokens_details.cached_tokens``); then ``data: [DONE]``.
  ``chunk_delay`` seconds pass between chunks.
- ``Hang(message=None)``: streams the message's chunks (if any) but no
  finish, then keeps the response open until the client goes away — a reply
  to cancel in the middle.
- ``HTTPError(status, message)``: that status with an OpenAI-style JSON
  error body (the adapters retry 429 and 5xx; 400 fails at once).
- a callable ``reply(request: FakeRequest)``, sync or async, returning any
  of the above. It may sleep or wait (on a ``trio.Event`` the test sets);
  if the client goes away meanwhile, the wait is cancelled.

A request with no reply left gets a 400 whose message says so.

What it records: ``requests`` (each a ``FakeRequest``: ``method``, ``path``,
``headers`` with lower-case names, ``body`` — the parsed JSON), and
``disconnects`` (replies the client abandoned before their end: hung,
waiting or mid-stream). ``await server.wait_for(predicate)`` returns once
``predicate()`` is true, re-checking it whenever a request arrives or a
client goes away.
"""

from __future__ import annotations

import inspect
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

import attrs
import h11
import trio

from agentrio.messages import AssistantMessage, Text, ToolCall

from .models.loopback import read_request

__all__ = ["FakeOpenAI", "FakeRequest", "HTTPError", "Hang", "start_fake_openai"]


@attrs.define
class Hang:
    """Stream ``message`` without its finish, then wait for the client to leave."""

    message: AssistantMessage | None = None


@attrs.define
class HTTPError:
    status: int
    message: str = "fake_openai error"


@attrs.frozen
class FakeRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


FakeReply = AssistantMessage | Hang | HTTPError | Callable[[FakeRequest], Any]

_FINISH_REASONS = {"stop": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def chat_chunks(message: AssistantMessage, *, chunk_size: int = 4, model: str = "fake") -> Iterator[dict]:
    """The Chat Completions chunks a server streams for ``message``, without
    the finish and usage chunks (see ``finish_chunks``)."""

    def chunk(delta: dict) -> dict:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        }

    yield chunk({"role": "assistant", "content": ""})
    calls = 0
    for part in message.content:
        if isinstance(part, Text):
            for start in range(0, len(part.text), chunk_size):
                yield chunk({"content": part.text[start : start + chunk_size]})
        elif isinstance(part, ToolCall):
            header = {"index": calls, "id": part.id, "type": "function"}
            yield chunk({"tool_calls": [{**header, "function": {"name": part.name, "arguments": ""}}]})
            raw = json.dumps(part.arguments)
            for start in range(0, len(raw), chunk_size):
                piece = raw[start : start + chunk_size]
                yield chunk({"tool_calls": [{"index": calls, "function": {"arguments": piece}}]})
            calls += 1


def finish_chunks(message: AssistantMessage, *, model: str = "fake") -> list[dict]:
    usage = message.usage
    return [
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [
                {"index": 0, "delta": {}, "finish_reason": _FINISH_REASONS.get(message.stop_reason, "stop")}
            ],
        },
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
            "usage": {
                "prompt_tokens": usage.input_tokens + usage.cache_read_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.cache_read_tokens + usage.output_tokens,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            },
        },
    ]


def _sse(data: dict | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()


@attrs.define(eq=False)
class FakeOpenAI:
    """The server's script and records. Its connection tasks live in the
    nursery given to ``start_fake_openai``; cancelling that nursery stops
    them all."""

    replies: deque[FakeReply] = attrs.field(factory=deque)
    chunk_size: int = 4
    chunk_delay: float = 0.0
    requests: list[FakeRequest] = attrs.field(factory=list)
    disconnects: int = 0
    base_url: str = ""
    port: int = 0
    _changed: trio.Event = attrs.field(factory=trio.Event)

    def add(self, *replies: FakeReply) -> None:
        self.replies.extend(replies)

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _handle(self, stream: trio.SocketStream) -> None:
        try:
            await self._serve(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
            pass
        finally:
            await stream.aclose()

    async def _serve(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request = await _read_request(conn, stream)
            if request is None:
                return
            self.requests.append(request)
            self._notify()
            client_left = False

            async def watch_for_hangup(scope: trio.CancelScope) -> None:
                # Nothing more comes from a client waiting for its response,
                # except the end of the connection when it gives up.
                nonlocal client_left
                while data := await stream.receive_some(65536):
                    conn.receive_data(data)
                client_left = True
                scope.cancel()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch_for_hangup, nursery.cancel_scope)
                await self._respond(conn, stream, request)
                nursery.cancel_scope.cancel()
            if client_left:
                self.disconnects += 1
                self._notify()
                return
            conn.start_next_cycle()

    async def _respond(self, conn: h11.Connection, stream: trio.SocketStream, request: FakeRequest) -> None:
        if not self.replies:
            reply: Any = HTTPError(400, f"fake_openai: no reply left for request #{len(self.requests)}")
        else:
            reply = self.replies.popleft()
        if callable(reply):
            reply = reply(request)
            if inspect.isawaitable(reply):
                reply = await reply
        send = partial(_send, conn, stream)
        model = request.body.get("model", "fake") if isinstance(request.body, dict) else "fake"
        if isinstance(reply, HTTPError):
            body = json.dumps({"error": {"message": reply.message, "type": "fake_error", "code": None}})
            headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
            await send(h11.Response(status_code=reply.status, headers=headers))
            await send(h11.Data(data=body.encode()))
            await send(h11.EndOfMessage())
            return
        headers = [("content-type", "text/event-stream"), ("transfer-encoding", "chunked")]
        await send(h11.Response(status_code=200, headers=headers))
        if isinstance(reply, Hang):
            if reply.message is not None:
                await self._stream(send, chat_chunks(reply.message, chunk_size=self.chunk_size, model=model))
            await trio.sleep_forever()
        if not isinstance(reply, AssistantMessage):
            raise TypeError(f"fake_openai: a reply must be an AssistantMessage, Hang or HTTPError: {reply!r}")
        await self._stream(send, chat_chunks(reply, chunk_size=self.chunk_size, model=model))
        await self._stream(send, finish_chunks(reply, model=model))
        await send(h11.Data(data=_sse("[DONE]")))
        await send(h11.EndOfMessage())

    async def _stream(self, send: Callable, chunks: Iterable[dict]) -> None:
        for chunk in chunks:
            await send(h11.Data(data=_sse(chunk)))
            if self.chunk_delay:
                await trio.sleep(self.chunk_delay)


async def _send(conn: h11.Connection, stream: trio.SocketStream, event: h11.Event) -> None:
    await stream.send_all(conn.send(event))


async def _read_request(conn: h11.Connection, stream: trio.SocketStream) -> FakeRequest | None:
    received = await read_request(conn, stream)
    if received is None:
        return None
    try:
        parsed: Any = json.loads(received.body) if received.body else None
    except ValueError:
        parsed = received.body
    return FakeRequest(received.method, received.path, received.headers, parsed)


async def start_fake_openai(
    nursery: trio.Nursery,
    replies: Iterable[FakeReply] = (),
    *,
    chunk_size: int = 4,
    chunk_delay: float = 0.0,
) -> FakeOpenAI:
    """Listen on a free port of 127.0.0.1, serving in ``nursery``."""
    server = FakeOpenAI(deque(replies), chunk_size=chunk_size, chunk_delay=chunk_delay)
    listeners = await nursery.start(partial(trio.serve_tcp, server._handle, 0, host="127.0.0.1"))
    server.port = listeners[0].socket.getsockname()[1]
    server.base_url = f"http://127.0.0.1:{server.port}/v1"
    return server
