"""What waits to be sent to each client of a gateway, and the budget all
of them share."""

from __future__ import annotations

import json
import logging
import math
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs
import trio

if TYPE_CHECKING:
    from .jsonrpc import Peer

log = logging.getLogger("agentrio.gateway")


#: Updates that may merge with the one before them while both wait to be sent.
MERGEABLE = frozenset({"agent_message_chunk", "agent_thought_chunk"})
#: What a queued item is reckoned to cost beyond its text.
OVERHEAD = 100


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
        self.size = OVERHEAD + sum(map(len, self.texts))

    def absorb(self, other: _Chunks) -> bool:
        if (self.session_id, self.kind, self.meta) != (other.session_id, other.kind, other.meta):
            return False
        self.texts += other.texts
        self.size += other.size - OVERHEAD
        return True

    def text(self) -> str:
        update: dict[str, Any] = {
            "sessionUpdate": self.kind,
            "content": {"type": "text", "text": "".join(self.texts)},
        }
        if self.meta is not None:
            update["_meta"] = self.meta
        return encode(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": self.session_id, "update": update},
            }
        )


@attrs.define(eq=False)
class _Snapshot:
    """A tool call's progress so far (each update repeats what came before):
    a newer one for the same call takes its place while it waits."""

    key: tuple[Any, Any]
    encoded: str
    size: int = 0

    def __attrs_post_init__(self) -> None:
        self.size = OVERHEAD + len(self.encoded)

    def text(self) -> str:
        return self.encoded


@attrs.define(eq=False)
class _Stream:
    """Messages made only as they are taken (a session's replay): what waits
    of them costs nothing, however long the history."""

    messages: Iterator[dict[str, Any]]
    size: int = OVERHEAD


def _chunk_of(message: dict[str, Any]) -> _Chunks | None:
    update = _update_of(message)
    if update is None or update.get("sessionUpdate") not in MERGEABLE:
        return None
    content = update.get("content")
    if (
        not isinstance(content, dict)
        or content.get("type") != "text"
        or set(update) - {"sessionUpdate", "content", "_meta"}
    ):
        return None
    return _Chunks(
        message["params"]["sessionId"], update["sessionUpdate"], update.get("_meta"), [content["text"]]
    )


def _update_of(message: dict[str, Any]) -> dict[str, Any] | None:
    params = message.get("params")
    if message.get("method") != "session/update" or not isinstance(params, dict):
        return None
    update = params.get("update")
    return update if isinstance(update, dict) else None


def _call_of(message: dict[str, Any]) -> tuple[tuple[Any, Any] | None, bool]:
    """The (session, tool call) a message is about, if any, and whether it
    is a progress snapshot (an update with content and no status)."""
    update = _update_of(message)
    if update is None or not isinstance(call_id := update.get("toolCallId"), str):
        return None, False
    snapshot = (
        update.get("sessionUpdate") == "tool_call_update" and "status" not in update and "content" in update
    )
    return (message["params"].get("sessionId"), call_id), snapshot


class Outbox:
    """What waits to be sent to one client, reckoned in bytes.

    Waiting messages shrink rather than pile up: a text chunk that follows
    another of the same kind and session merges with it, and a tool call's
    progress snapshot replaces the one still waiting for the same call. A
    client that keeps up gets every update as it was made; one that lags
    gets fewer, larger ones saying the same. A stream (``put_stream``) is
    made message by message as the client takes them, so what a client
    asked for (a long replay) costs nothing while it waits. ``size`` is
    what the waiting messages cost; ``budget`` (shared by every client of
    a server) is told of each change.
    """

    def __init__(self, budget: Budget | None = None) -> None:
        self._items: deque[str | _Chunks | _Snapshot | _Stream] = deque()
        self._snapshots: dict[tuple[Any, Any], _Snapshot] = {}
        self._budget = budget
        self.size = 0
        self._closed = False
        self._ready = trio.Event()

    def put(self, message: dict[str, Any], encoded: str | None = None) -> None:
        """Queue ``message`` (``encoded``: its text, made once for every
        client it goes to)."""
        chunk = _chunk_of(message)
        last = self._items[-1] if self._items else None
        if chunk is not None:
            if isinstance(last, _Chunks) and last.absorb(chunk):
                self._grow(chunk.size - OVERHEAD)
            else:
                self._append(chunk)
            return
        key, snapshot = _call_of(message)
        text = encoded if encoded is not None else encode(message)
        if snapshot and key is not None and (waiting := self._snapshots.get(key)) is not None:
            self._grow(len(text) - len(waiting.encoded))
            waiting.encoded = text
            waiting.size = OVERHEAD + len(text)
        elif snapshot and key is not None:  # (a snapshot is always about a call)
            self._snapshots[key] = item = _Snapshot(key, text)
            self._append(item)
        else:
            if key is not None:
                self._snapshots.pop(key, None)  # what comes after that call's news stays after it
            self._append(text)

    def put_stream(self, messages: Iterator[dict[str, Any]]) -> None:
        """Queue ``messages``, each made when the one before it has been taken."""
        self._append(_Stream(messages))

    def _append(self, item: str | _Chunks | _Snapshot | _Stream) -> None:
        self._items.append(item)
        self._grow(_size(item))
        self._ready.set()

    def _grow(self, delta: int) -> None:
        self.size += delta
        if self._budget is not None:
            self._budget.used += delta

    async def get(self) -> str | None:
        """The next message, or None once closed and empty."""
        while True:
            while not self._items:
                if self._closed:
                    return None
                await self._ready.wait()
                self._ready = trio.Event()
            item = self._items[0]
            if isinstance(item, _Stream):
                try:
                    message = next(item.messages, None)
                except Exception:  # a replay that cannot be made ends there; the connection goes on
                    log.exception("a queued stream of messages failed")
                    message = None
                if message is not None:
                    return encode(message)
            self._items.popleft()
            self._grow(-_size(item))
            if isinstance(item, _Snapshot) and self._snapshots.get(item.key) is item:
                del self._snapshots[item.key]
            if isinstance(item, str):
                return item
            if not isinstance(item, _Stream):
                return item.text()

    def close(self, *, discard: bool = False) -> None:
        """No more messages; ``get`` returns None once the queued ones are
        taken, or at once with ``discard``."""
        self._closed = True
        if discard:
            self._items.clear()
            self._snapshots.clear()
            self._grow(-self.size)
        self._ready.set()


def _size(item: str | _Chunks | _Snapshot | _Stream) -> int:
    return OVERHEAD + len(item) if isinstance(item, str) else item.size


def encode(message: dict[str, Any]) -> str:
    """``message`` as JSON text; a NaN or an infinity (which JSON lacks, say
    in a tool's raw output) is sent as null."""
    try:
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(message), separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


class Budget:
    """The bytes waiting for every client of one server, together. Past
    ``limit``, the client with the most waiting is dropped (it may
    reconnect and load its sessions again), then the next, until the
    total is back under it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peers: set[Peer] = set()

    def enforce(self) -> None:
        while self.used > self.limit and self.peers:
            largest = max(self.peers, key=lambda p: p.waiting)
            largest.drop(
                f"the server holds more than {self.limit} bytes for its clients; this one had the most"
            )
            self.peers.discard(largest)
