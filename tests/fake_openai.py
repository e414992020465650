"""A fake OpenAI server on 127.0.0.1, for tests: Chat Completions and Responses.

It answers ``POST …/chat/completions`` and ``POST …/responses`` with
scripted replies, streamed as the real API streams them, so a client (an
adapter in the test's own process, or a subprocess such as ``python -m
agentrio run --model openai:fake --base-url URL``) is tested through real
sockets. Built on ``trio.serve_tcp`` and h11 (which httpx already depends
on); requests are read as the loopback server of the adapter tests reads
them (``tests/models/loopback.py``). Each API's stream format is a ``Wire``
(the one of the request's path); ``tests/fake_anthropic.py`` serves the
Anthropic Messages API with this same server and its own wire.

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
  its text in pieces of ``chunk_size`` characters (a ``Thinking`` part's
  as ``reasoning_content``, as compatible servers stream it); each tool call as a
  header chunk (``index``, ``id``, ``name``) and then its arguments as
  fragments of JSON; a ``finish_reason`` chunk (``stop``, ``tool_calls`` or
  ``length`` from the message's ``stop_reason``); a usage chunk
  (``prompt_tokens`` = input + cache-read tokens, ``completion_tokens``,
  ``prompt_tokens_details.cached_tokens``); then ``data: [DONE]``.
  Over Responses, as the recorded streams go: ``response.created``, then
  each text part as a ``message`` output item and each tool call as a
  ``function_call`` item (added, deltas of ``chunk_size`` characters, done),
  then ``response.completed`` (``response.incomplete`` for ``max_tokens``)
  with the usage. ``chunk_delay`` seconds pass between chunks.
- ``Hang(message=None)``: streams the message's chunks (if any) but no
  finish, then keeps the response open until the client goes away — a reply
  to cancel in the middle.
- ``HTTPError(status, message)``: that status with the API's JSON error
  body (the adapters retry 429 and 5xx; 400 fails at once).
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

from agentrio.messages import AssistantMessage, Text, Thinking, ToolCall

from .models.loopback import read_request

__all__ = [
    "FakeReply",
    "FakeRequest",
    "FakeServer",
    "HTTPError",
    "Hang",
    "Wire",
    "pieces",
    "sse_event",
    "start_fake_openai",
    "start_fake_server",
]


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


@attrs.frozen
class Wire:
    """How one API streams an answer: ``start(message, chunk_size, model)``
    the SSE events of ``message`` up to its finish, ``end(message, model)``
    the events that finish it (stop reason, usage, end marker), and
    ``error(status, message)`` the JSON body of an HTTP error. It answers
    requests whose path ends with ``path``."""

    path: str
    start: Callable[[AssistantMessage, int, str], Iterable[bytes]]
    end: Callable[[AssistantMessage, str], Iterable[bytes]]
    error: Callable[[int, str], dict]


def sse_event(data: dict | str, event: str | None = None) -> bytes:
    """One server-sent event: ``data`` (JSON unless a string), named ``event`` if given."""
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {text}\n\n".encode()


def pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def chat_chunks(message: AssistantMessage, chunk_size: int = 4, model: str = "fake") -> Iterator[bytes]:
    """The Chat Completions chunks a server streams for ``message``, without
    the finish and usage chunks (see ``chat_finish``)."""

    def chunk(delta: dict) -> bytes:
        return sse_event(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
        )

    yield chunk({"role": "assistant", "content": ""})
    calls = 0
    for part in message.content:
        if isinstance(part, Text):
            for piece in pieces(part.text, chunk_size):
                yield chunk({"content": piece})
        elif isinstance(part, Thinking):
            for piece in pieces(part.text, chunk_size):
                yield chunk({"reasoning_content": piece})
        elif isinstance(part, ToolCall):
            header = {"index": calls, "id": part.id, "type": "function"}
            yield chunk({"tool_calls": [{**header, "function": {"name": part.name, "arguments": ""}}]})
            for piece in pieces(json.dumps(part.arguments), chunk_size):
                yield chunk({"tool_calls": [{"index": calls, "function": {"arguments": piece}}]})
            calls += 1


def chat_finish(message: AssistantMessage, model: str = "fake") -> list[bytes]:
    usage = message.usage
    common = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}
    finish = {"index": 0, "delta": {}, "finish_reason": _FINISH_REASONS.get(message.stop_reason, "stop")}
    counts = {
        "prompt_tokens": usage.input_tokens + usage.cache_read_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.cache_read_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
    }
    return [
        sse_event({**common, "choices": [finish]}),
        sse_event({**common, "choices": [], "usage": counts}),
        sse_event("[DONE]"),
    ]


def openai_error(status: int, message: str) -> dict:
    return {"error": {"message": message, "type": "fake_error", "code": None}}


def _responses_items(message: AssistantMessage) -> list[dict]:
    """The output items of a finished response: a message per text part,
    a function call per tool call."""
    items: list[dict] = []
    for number, part in enumerate(message.content):
        if isinstance(part, Text):
            content = [{"type": "output_text", "text": part.text, "annotations": []}]
            items.append(
                {
                    "type": "message",
                    "id": f"msg_fake{number}",
                    "status": "completed",
                    "role": "assistant",
                    "content": content,
                }
            )
        elif isinstance(part, ToolCall):
            arguments = json.dumps(part.arguments)
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_fake{number}",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": arguments,
                    "status": "completed",
                }
            )
    return items


def _response(model: str, status: str, output: list[dict], **fields: Any) -> dict:
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": model,
        "output": output,
        **fields,
    }


def responses_events(message: AssistantMessage, chunk_size: int = 4, model: str = "fake") -> Iterator[bytes]:
    """The Responses events a server streams for ``message``, up to (not
    including) ``response.completed``."""

    def event(kind: str, **payload: Any) -> bytes:
        return sse_event({"type": kind, **payload}, kind)

    yield event("response.created", response=_response(model, "in_progress", []))
    yield event("response.in_progress", response=_response(model, "in_progress", []))
    for index, item in enumerate(_responses_items(message)):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            started = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=started)
            empty = {"type": "output_text", "text": "", "annotations": []}
            yield event("response.content_part.added", **at, content_index=0, part=empty)
            for piece in pieces(text, chunk_size):
                yield event("response.output_text.delta", **at, content_index=0, delta=piece)
            yield event("response.output_text.done", **at, content_index=0, text=text)
            yield event("response.content_part.done", **at, content_index=0, part=item["content"][0])
        else:
            started = {**item, "status": "in_progress", "arguments": ""}
            yield event("response.output_item.added", output_index=index, item=started)
            for piece in pieces(item["arguments"], chunk_size):
                yield event("response.function_call_arguments.delta", **at, delta=piece)
            yield event("response.function_call_arguments.done", **at, arguments=item["arguments"])
        yield event("response.output_item.done", output_index=index, item=item)


def responses_finish(message: AssistantMessage, model: str = "fake") -> list[bytes]:
    usage = message.usage
    counts = {
        "input_tokens": usage.input_tokens + usage.cache_read_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.cache_read_tokens + usage.output_tokens,
    }
    if message.stop_reason == "max_tokens":
        kind, status, details = "response.incomplete", "incomplete", {"reason": "max_output_tokens"}
    else:
        kind, status, details = "response.completed", "completed", None
    response = _response(model, status, _responses_items(message), incomplete_details=details, usage=counts)
    return [sse_event({"type": kind, "response": response}, kind)]


CHAT = Wire("/chat/completions", chat_chunks, chat_finish, openai_error)
RESPONSES = Wire("/responses", responses_events, responses_finish, openai_error)


@attrs.define(eq=False)
class FakeServer:
    """The server's script and records. Its connection tasks live in the
    nursery given to ``start_fake_server``; cancelling that nursery stops
    them all. ``wires``: the APIs it speaks."""

    wires: tuple[Wire, ...]
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
        wire = next((w for w in self.wires if request.path.endswith(w.path)), None)
        if wire is None:
            reply: Any = HTTPError(404, f"fake server: nothing is served at {request.path}")
            wire = self.wires[0]
        elif not self.replies:
            reply = HTTPError(400, f"fake server: no reply left for request #{len(self.requests)}")
        else:
            reply = self.replies.popleft()
        if callable(reply):
            reply = reply(request)
            if inspect.isawaitable(reply):
                reply = await reply
        send = partial(_send, conn, stream)
        model = request.body.get("model", "fake") if isinstance(request.body, dict) else "fake"
        if isinstance(reply, HTTPError):
            body = json.dumps(wire.error(reply.status, reply.message))
            headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
            await send(h11.Response(status_code=reply.status, headers=headers))
            await send(h11.Data(data=body.encode()))
            await send(h11.EndOfMessage())
            return
        headers = [("content-type", "text/event-stream"), ("transfer-encoding", "chunked")]
        await send(h11.Response(status_code=200, headers=headers))
        if isinstance(reply, Hang):
            if reply.message is not None:
                await self._stream(send, wire.start(reply.message, self.chunk_size, model))
            await trio.sleep_forever()
        if not isinstance(reply, AssistantMessage):
            raise TypeError(f"fake server: a reply must be an AssistantMessage, Hang or HTTPError: {reply!r}")
        await self._stream(send, wire.start(reply, self.chunk_size, model))
        await self._stream(send, wire.end(reply, model))
        await send(h11.EndOfMessage())

    async def _stream(self, send: Callable, events: Iterable[bytes]) -> None:
        for event in events:
            await send(h11.Data(data=event))
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


async def start_fake_server(
    nursery: trio.Nursery,
    wires: tuple[Wire, ...],
    replies: Iterable[FakeReply] = (),
    *,
    prefix: str = "",
    chunk_size: int = 4,
    chunk_delay: float = 0.0,
) -> FakeServer:
    """Listen on a free port of 127.0.0.1, serving ``wires`` in ``nursery``;
    ``base_url`` is the server's address followed by ``prefix``."""
    server = FakeServer(wires, deque(replies), chunk_size=chunk_size, chunk_delay=chunk_delay)
    listeners = await nursery.start(partial(trio.serve_tcp, server._handle, 0, host="127.0.0.1"))
    server.port = listeners[0].socket.getsockname()[1]
    server.base_url = f"http://127.0.0.1:{server.port}{prefix}"
    return server


async def start_fake_openai(
    nursery: trio.Nursery,
    replies: Iterable[FakeReply] = (),
    *,
    chunk_size: int = 4,
    chunk_delay: float = 0.0,
) -> FakeServer:
    """A fake OpenAI (Chat Completions and Responses) at ``base_url``
    ``http://127.0.0.1:PORT/v1``, as an OpenAI adapter's ``base_url`` ends."""
    return await start_fake_server(
        nursery, (CHAT, RESPONSES), replies, prefix="/v1", chunk_size=chunk_size, chunk_delay=chunk_delay
    )
