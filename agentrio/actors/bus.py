"""Fan-out of an agent's events to its subscribers."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..events import Event


class EventBus:
    """Numbers events and hands each to every subscriber.

    Emitting never blocks: a subscriber's buffer is unbounded, so a slow
    reader costs memory, never the agent's progress, and never loses an event.
    """

    def __init__(self, agent_id: str, session_id: str) -> None:
        self._agent_id = agent_id
        self._session_id = session_id
        self._seq = 0
        self._subscribers: list[trio.MemorySendChannel[Event]] = []

    def emit(self, event_type: type[Event], **fields: Any) -> None:
        self._seq += 1
        if not self._subscribers:
            return  # nobody listens: build nothing, but keep counting
        event = event_type(
            agent_id=self._agent_id,
            session_id=self._session_id,
            seq=self._seq,
            time=trio.current_time(),
            **fields,
        )
        for channel in list(self._subscribers):
            try:
                channel.send_nowait(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.remove(channel)

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        send, receive = trio.open_memory_channel[Event](math.inf)
        self._subscribers.append(send)
        try:
            async with receive:
                yield receive
        finally:
            if send in self._subscribers:
                self._subscribers.remove(send)
            send.close()

    def close(self) -> None:
        """End every subscriber's iteration."""
        for channel in self._subscribers:
            channel.close()
        self._subscribers.clear()
