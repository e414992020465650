"""JSON-RPC 2.0 with one client, over any transport that carries whole
messages (a line on stdio, a text frame on a WebSocket)."""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

import attrs
import trio

from .outbox import Budget, Outbox

log = logging.getLogger("agentrio.gateway")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: Seconds the messages still queued for a client that stopped sending may take to leave.
FLUSH_TIMEOUT = 5.0
#: Seconds a message may take to leave before its client counts as stalled.
STALL_TIMEOUT = 30.0
#: Deepest nesting of arrays and objects a message may have.
MAX_DEPTH = 64
#: Code of a request refused because too many are already being served.
BUSY = -32011


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


@attrs.frozen
class Reply:
    """What a handler may return instead of a bare result: the result, and
    ``then()``, called right after the response is queued (to queue what the
    client must see after it, such as updates of a session it just learnt of)."""

    result: Any
    then: Callable[[], None]


class PeerGone(Exception):
    """The client went away (or was dropped) before it answered."""


class Transport(Protocol):
    async def receive(self) -> str | None:
        """The next message, or None when the client has gone (a
        ``MessageTooLarge`` for one longer than the transport takes)."""

    async def send(self, text: str) -> None: ...


#: ``handler(method, params)``: the result of a request (ignored for a
#: notification); raises ``RpcError`` to answer with an error.
Handler = Callable[[str, Any], Awaitable[Any]]


@attrs.define(eq=False)
class _Pending:
    done: trio.Event = attrs.field(factory=trio.Event)
    response: dict[str, Any] | None = None


def _too_deep(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects deeper than ``limit``."""
    level = [value]
    for _ in range(limit):
        level = [
            c for v in level if isinstance(v, dict | list) for c in (v.values() if isinstance(v, dict) else v)
        ]
        if not level:
            return False
    return any(isinstance(v, dict | list) for v in level)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _valid_id(request_id: Any) -> bool:
    return (
        request_id is None
        or isinstance(request_id, str)
        or (isinstance(request_id, int) and not isinstance(request_id, bool))
    )


class Peer:
    """One client's JSON-RPC connection.

    Outgoing messages leave in the order they were queued, through an
    ``Outbox`` that ``send`` fills without ever waiting. A client is dropped
    (``dropped`` says why) only when it stops taking its messages: one has
    been leaving for more than ``stall_timeout`` seconds, or more than
    ``queue_bytes`` wait for it, or it holds the most of a full ``budget``.

    Reading never stops while requests are served: each request runs in a
    task of its own, so a cancel or a permission answer is handled however
    many prompts are running. At most ``max_inflight`` requests run at once;
    one more is answered at once with a ``BUSY`` error. A message that is
    not JSON-RPC is answered with an error and the connection goes on.
    ``run`` returns when the client goes or is dropped, with every task it
    started finished.
    """

    def __init__(
        self,
        transport: Transport,
        handler: Handler,
        *,
        queue_bytes: int = 64 * 1024 * 1024,
        stall_timeout: float = STALL_TIMEOUT,
        max_inflight: int = 64,
        budget: Budget | None = None,
    ) -> None:
        self._transport = transport
        self._handler = handler
        self._budget = budget
        self._outbox = Outbox(budget)
        self._queue_bytes = queue_bytes
        self._stall_timeout = stall_timeout
        #: When the message being written began to leave (None: none is).
        self._sending_since: float | None = None
        self._max_inflight = max_inflight
        self._inflight = 0
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._scope = trio.CancelScope()
        self.dropped: str | None = None
        self.closed = False
        if budget is not None:
            budget.peers.add(self)

    @property
    def waiting(self) -> int:
        """Roughly the bytes waiting to be sent to this client."""
        return self._outbox.size

    # -- sending ----------------------------------------------------------------

    def send(self, message: dict[str, Any], encoded: str | None = None) -> None:
        """Queue ``message`` (``encoded``: its text, if already made); never waits."""
        if self.closed or self.dropped is not None:
            return
        self._outbox.put(message, encoded)
        if (
            self._sending_since is not None
            and trio.current_time() - self._sending_since > self._stall_timeout
        ):
            self.drop(f"the client took nothing for {self._stall_timeout:g} s")
        elif self._outbox.size > self._queue_bytes:
            self.drop(f"more than {self._queue_bytes} bytes wait for the client")
        elif self._budget is not None:
            self._budget.enforce()

    def send_stream(self, messages: Iterator[dict[str, Any]]) -> None:
        """Queue ``messages``, made one by one as the client takes them."""
        if not self.closed and self.dropped is None:
            self._outbox.put_stream(messages)

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
            code = error.get("code")
            raise RpcError(
                code if isinstance(code, int) else INTERNAL_ERROR,
                str(error.get("message", "")),
                error.get("data"),
            )
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
            self._outbox.close(discard=True)
            if self._budget is not None:
                self._budget.peers.discard(self)
            for pending in self._pending.values():
                pending.done.set()

    async def _write(self) -> None:
        try:
            while (text := await self._outbox.get()) is not None:
                self._sending_since = trio.current_time()
                await self._transport.send(text)
                self._sending_since = None
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._outbox.close(discard=True)
            self._scope.cancel()  # the client went away

    async def _read(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                text = await self._transport.receive()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if text is None:
                return
            if isinstance(text, MessageTooLarge):
                self.send(_error(None, RpcError(PARSE_ERROR, str(text))))
                continue
            self._receive(text, nursery)

    def _receive(self, text: str, nursery: trio.Nursery) -> None:
        try:
            message = json.loads(text, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):
            self.send(_error(None, RpcError(PARSE_ERROR, "the message is not JSON")))
            return
        if _too_deep(message, MAX_DEPTH):
            self.send(
                _error(None, RpcError(INVALID_REQUEST, f"the message nests deeper than {MAX_DEPTH} levels"))
            )
            return
        if not isinstance(message, dict):
            self.send(_error(None, RpcError(INVALID_REQUEST, "a message is a JSON object")))
            return
        request_id = message.get("id")
        if not _valid_id(request_id):
            if "method" in message:
                self.send(_error(None, RpcError(INVALID_REQUEST, "an id is a string, an integer or null")))
            return
        if "method" not in message:
            if (pending := self._pending.get(request_id)) is not None:  # type: ignore[arg-type]
                pending.response = message
                pending.done.set()
        elif not isinstance(message["method"], str):
            if "id" in message:
                self.send(_error(request_id, RpcError(INVALID_REQUEST, "method must be a string")))
        elif self._inflight >= self._max_inflight:
            if "id" in message:
                self.send(
                    _error(
                        request_id,
                        RpcError(
                            BUSY,
                            f"{self._max_inflight} requests are already being "
                            "served on this connection; wait for one to end",
                        ),
                    )
                )
            else:
                log.warning("a notification was ignored: %d requests are being served", self._inflight)
        else:
            self._inflight += 1
            nursery.start_soon(self._dispatch, message)

    async def _dispatch(self, message: dict[str, Any]) -> None:
        try:
            method, request_id = message["method"], message.get("id")
            is_request = "id" in message
            try:
                result = await self._handler(method, message.get("params"))
            except RpcError as exc:
                if is_request:
                    self.send(_error(request_id, exc))
            except Exception as exc:
                log.exception("handling %s failed", method)
                if is_request:
                    self.send(_error(request_id, RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")))
            else:
                reply = result if isinstance(result, Reply) else None
                if is_request:
                    self.send(
                        {"jsonrpc": "2.0", "id": request_id, "result": reply.result if reply else result}
                    )
                if reply is not None:
                    reply.then()
        finally:
            self._inflight -= 1


class MessageTooLarge(str):
    """What a transport receives in place of a message longer than it takes:
    the peer answers it with a parse error and reads on."""


def _error(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}
