"""JSON-RPC 2.0 with one client, over any transport that carries whole
messages (a line on stdio, a text frame on a WebSocket)."""

from __future__ import annotations

import itertools
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs
import trio

log = logging.getLogger("agentrio.gateway")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: Seconds the messages still queued for a client that stopped sending may take to leave.
FLUSH_TIMEOUT = 5.0


class RpcError(Exception):
    """An error response: raised by a handler to answer with it, or by
    ``Peer.request`` when the client answered with one."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class PeerGone(Exception):
    """The client went away (or was dropped) before it answered."""


class Transport(Protocol):
    async def receive(self) -> str | None:
        """The next message, or None when the client has gone."""

    async def send(self, text: str) -> None: ...


#: ``handler(method, params)``: the result of a request (ignored for a
#: notification); raises ``RpcError`` to answer with an error.
Handler = Callable[[str, Any], Awaitable[Any]]


#: Updates that may merge with the one before them while both wait to be sent.
MERGEABLE = frozenset({"agent_message_chunk", "agent_thought_chunk"})


@attrs.define(eq=False)
class _Chunks:
    """Consecutive text chunks of one kind, for one session, waiting as one."""

    session_id: Any
    kind: str
    meta: Any
    texts: list[str]
    #: Roughly its encoded length.
    size: int = 0

    def __attrs_post_init__(self) -> None:
        self.size = 100 + sum(map(len, self.texts))

    def absorb(self, other: _Chunks) -> bool:
        if (self.session_id, self.kind, self.meta) != (other.session_id, other.kind, other.meta):
            return False
        self.texts += other.texts
        self.size += other.size - 100
        return True

    def message(self) -> dict[str, Any]:
        update: dict[str, Any] = {"sessionUpdate": self.kind, "content": {"type": "text", "text": "".join(self.texts)}}
        if self.meta is not None:
            update["_meta"] = self.meta
        return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": self.session_id, "update": update}}


def _chunk_of(message: dict[str, Any]) -> _Chunks | None:
    params = message.get("params")
    update = params.get("update") if message.get("method") == "session/update" and isinstance(params, dict) else None
    if not isinstance(update, dict) or update.get("sessionUpdate") not in MERGEABLE:
        return None
    content = update.get("content")
    if not isinstance(content, dict) or content.get("type") != "text" or set(update) - {"sessionUpdate", "content", "_meta"}:
        return None
    return _Chunks(params["sessionId"], update["sessionUpdate"], update.get("_meta"), [content["text"]])


class Outbox:
    """What waits to be sent to one client, bounded in messages and bytes.

    A text chunk that follows another of the same kind and session merges
    with it while both wait: a client that keeps up gets every chunk as it
    was streamed, one that lags gets fewer, larger chunks of the same text,
    and only a client that stops reading fills the outbox.
    """

    def __init__(self, max_messages: int, max_bytes: int) -> None:
        self._items: deque[str | _Chunks] = deque()
        self._max_messages = max_messages
        self._max_bytes = max_bytes
        self._bytes = 0
        self._closed = False
        self._ready = trio.Event()

    def put(self, message: dict[str, Any]) -> bool:
        """Queue ``message``; False when the outbox is full."""
        chunk = _chunk_of(message)
        last = self._items[-1] if self._items else None
        if chunk is not None and isinstance(last, _Chunks) and last.absorb(chunk):
            self._bytes += chunk.size - 100
        else:
            item = chunk if chunk is not None else _encode(message)
            self._items.append(item)
            self._bytes += _size(item)
        self._ready.set()
        return len(self._items) <= self._max_messages and self._bytes <= self._max_bytes

    async def get(self) -> str | None:
        """The next message, or None once closed and empty."""
        while not self._items:
            if self._closed:
                return None
            await self._ready.wait()
            self._ready = trio.Event()
        item = self._items.popleft()
        self._bytes -= _size(item)
        return item if isinstance(item, str) else _encode(item.message())

    def close(self, *, discard: bool = False) -> None:
        """No more messages; ``get`` returns None once the queued ones are
        taken, or at once with ``discard``."""
        self._closed = True
        if discard:
            self._items.clear()
            self._bytes = 0
        self._ready.set()


def _size(item: str | _Chunks) -> int:
    return len(item) if isinstance(item, str) else item.size


def _encode(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


@attrs.define(eq=False)
class _Pending:
    done: trio.Event = attrs.field(factory=trio.Event)
    response: dict[str, Any] | None = None


class Peer:
    """One client's JSON-RPC connection.

    Outgoing messages leave in the order they were queued, through a bounded
    ``Outbox`` that ``send`` fills without ever waiting: a client that lets
    it fill up is dropped (``dropped`` says why) rather than slowing whoever
    is sending to it. Incoming requests run concurrently, at most
    ``max_inflight`` at once; beyond that the peer stops reading, so a
    flooding client is held back by its own socket. ``run`` returns when the
    client goes or is dropped, with every task it started finished.
    """

    def __init__(
        self,
        transport: Transport,
        handler: Handler,
        *,
        queue_size: int = 1024,
        queue_bytes: int = 16 * 1024 * 1024,
        max_inflight: int = 32,
    ) -> None:
        self._transport = transport
        self._handler = handler
        self._outbox = Outbox(queue_size, queue_bytes)
        self._inflight = trio.Semaphore(max_inflight)
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._scope = trio.CancelScope()
        self.dropped: str | None = None
        self.closed = False

    # -- sending ----------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Queue ``message``; never waits. A full queue drops the client."""
        if self.closed or self.dropped is not None:
            return
        if not self._outbox.put(message):
            self.drop("the client is not reading its messages fast enough")

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        """Ask the client; its result, or ``RpcError``, or ``PeerGone``."""
        if self.closed:
            raise PeerGone(self.dropped or "the client has gone")
        request_id = next(self._ids)
        pending = self._pending[request_id] = _Pending()
        try:
            self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            await pending.done.wait()
        finally:
            del self._pending[request_id]
        if pending.response is None:
            raise PeerGone(self.dropped or "the client has gone")
        if "error" in pending.response:
            error = pending.response["error"] if isinstance(pending.response["error"], dict) else {}
            raise RpcError(error.get("code", INTERNAL_ERROR), str(error.get("message", "")), error.get("data"))
        return pending.response.get("result")

    def drop(self, reason: str) -> None:
        """Stop serving this client: nothing more is queued for it, what was
        queued is discarded, and ``run`` returns once the message being
        written (if any) is out."""
        if self.dropped is None and not self.closed:
            self.dropped = reason
            log.warning("dropping a client: %s", reason)
        self._outbox.close(discard=True)
        self._scope.cancel()

    # -- serving ----------------------------------------------------------------

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write)
                with self._scope:
                    async with trio.open_nursery() as handlers:
                        await self._read(handlers)
                        handlers.cancel_scope.cancel()
                # Reading is over (the client left or was dropped): what is
                # queued still goes, briefly; a frame being written is never cut.
                self._outbox.close()
                nursery.cancel_scope.deadline = trio.current_time() + FLUSH_TIMEOUT
        finally:
            self.closed = True
            self._outbox.close()
            for pending in self._pending.values():
                pending.done.set()

    async def _write(self) -> None:
        try:
            while (text := await self._outbox.get()) is not None:
                await self._transport.send(text)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._outbox.close(discard=True)
            self._scope.cancel()  # the client went away

    async def _read(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                text = await self._transport.receive()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            except ValueError as exc:  # a message the transport cannot frame
                self.drop(str(exc))
                return
            if text is None:
                return
            try:
                message = json.loads(text)
            except ValueError:
                self.send(_error(None, RpcError(PARSE_ERROR, "not JSON")))
                continue
            if not isinstance(message, dict):
                self.send(_error(None, RpcError(INVALID_REQUEST, "a message is a JSON object")))
            elif "method" in message:
                await self._inflight.acquire()
                nursery.start_soon(self._dispatch, message)
            elif (pending := self._pending.get(message.get("id"))) is not None:  # type: ignore[arg-type]
                pending.response = message
                pending.done.set()

    async def _dispatch(self, message: dict[str, Any]) -> None:
        try:
            method, request_id = message["method"], message.get("id")
            is_request = "id" in message
            try:
                if not isinstance(method, str):
                    raise RpcError(INVALID_REQUEST, "method must be a string")
                result = await self._handler(method, message.get("params"))
            except RpcError as exc:
                if is_request:
                    self.send(_error(request_id, exc))
            except Exception as exc:
                log.exception("handling %s failed", method)
                if is_request:
                    self.send(_error(request_id, RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")))
            else:
                if is_request:
                    self.send({"jsonrpc": "2.0", "id": request_id, "result": result})
        finally:
            self._inflight.release()


def _error(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}
