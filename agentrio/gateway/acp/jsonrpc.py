"""JSON-RPC 2.0 with one client, over any transport that carries whole
messages (a line on stdio, a text frame on a WebSocket)."""

from __future__ import annotations

import itertools
import json
import logging
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


@attrs.define(eq=False)
class _Pending:
    done: trio.Event = attrs.field(factory=trio.Event)
    response: dict[str, Any] | None = None


class Peer:
    """One client's JSON-RPC connection.

    Outgoing messages leave in the order they were queued, through a bounded
    queue that ``send`` fills without ever waiting: a client that lets the
    queue fill up is dropped (``dropped`` says why) rather than slowing
    whoever is sending to it. Incoming requests run concurrently, at most
    ``max_inflight`` at once; beyond that the peer stops reading, so a
    flooding client is held back by its own socket. ``run`` returns when the
    client goes or is dropped, with every task it started finished.
    """

    def __init__(
        self, transport: Transport, handler: Handler, *, queue_size: int = 1024, max_inflight: int = 32
    ) -> None:
        self._transport = transport
        self._handler = handler
        self._send, self._outbox = trio.open_memory_channel[str](queue_size)
        self._inflight = trio.Semaphore(max_inflight)
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._scope = trio.CancelScope()
        self.dropped: str | None = None
        self.closed = False

    # -- sending ----------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Queue ``message``; never waits. A full queue drops the client."""
        if self.closed:
            return
        try:
            self._send.send_nowait(json.dumps(message, separators=(",", ":"), ensure_ascii=False))
        except trio.WouldBlock:
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
        """Stop serving this client (``run`` returns soon)."""
        if self.dropped is None and not self.closed:
            self.dropped = reason
            log.warning("dropping a client: %s", reason)
        self._scope.cancel()

    # -- serving ----------------------------------------------------------------

    async def run(self) -> None:
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._write)
                    async with trio.open_nursery() as handlers:
                        await self._read(handlers)
                        handlers.cancel_scope.cancel()
                    # The client stopped sending: what is queued for it still goes, briefly.
                    self._send.close()
                    nursery.cancel_scope.deadline = trio.current_time() + FLUSH_TIMEOUT
        finally:
            self.closed = True
            self._send.close()
            for pending in self._pending.values():
                pending.done.set()

    async def _write(self) -> None:
        try:
            async for text in self._outbox:
                await self._transport.send(text)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
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
