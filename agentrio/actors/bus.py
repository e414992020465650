"""Fan-out of an agent's events to its subscribers."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from ..events import Event, Lagged, MessageUpdate, ToolExecutionUpdate
from ..models.events import TextDelta, ThinkingDelta

#: Events a subscriber may have waiting before deltas are coalesced.
SUBSCRIBER_CAPACITY = 1024
#: The most text one coalesced delta may hold; past it deltas are dropped
#: (and counted in a ``lagged`` event), so a reader that never reads costs
#: bounded memory whatever a tool prints.
COALESCED_TEXT_LIMIT = 64 * 1024
#: Events a subscriber may have waiting at all. Lifecycle events are never
#: dropped below this; a reader this far behind is cut off with a final
#: ``lagged`` event (``closed=True``) and may subscribe again.
SUBSCRIBER_HARD_LIMIT = 16 * SUBSCRIBER_CAPACITY

DELTAS = (MessageUpdate, ToolExecutionUpdate)


def _merged(earlier: Event, later: Event) -> Event | None:
    """One delta saying what ``earlier`` and ``later`` say together, or None
    when they cannot be merged."""
    if isinstance(earlier, MessageUpdate) and isinstance(later, MessageUpdate):
        a, b = earlier.delta, later.delta
        if type(a) is type(b) and isinstance(a, TextDelta | ThinkingDelta) and a.index == b.index:
            if isinstance(a, ThinkingDelta) and (a.signature or b.signature):
                return None
            if len(a.text) + len(b.text) <= COALESCED_TEXT_LIMIT:
                return attrs.evolve(later, delta=attrs.evolve(b, text=a.text + b.text))
        return None
    if isinstance(earlier, ToolExecutionUpdate) and isinstance(later, ToolExecutionUpdate):
        a, b = earlier.progress, later.progress
        if (
            earlier.tool_call_id == later.tool_call_id
            and isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys() == {"stream", "text"}
            and a["stream"] == b["stream"]
            and len(a["text"]) + len(b["text"]) <= COALESCED_TEXT_LIMIT
        ):
            return attrs.evolve(later, progress={"stream": b["stream"], "text": a["text"] + b["text"]})
    return None


class Subscription:
    """One subscriber's buffer: ``async for event in subscription``.

    Guarantees: events arrive in ``seq`` order. Lifecycle events (everything
    but ``message_update`` and ``tool_execution_update``) are never dropped
    while the reader is less than ``SUBSCRIBER_HARD_LIMIT`` events behind.
    Once ``SUBSCRIBER_CAPACITY`` events wait, a new delta is merged into
    the delta before it when they continue each other, else dropped; the
    reader then gets a ``lagged`` event (how many were dropped) in its
    place, and ``message_end`` / ``tool_execution_end`` still bring the whole
    message or result. Memory is bounded whether or not anyone reads.
    """

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus
        self._events: deque[Event] = deque()
        self._closed = False
        self._arrived = trio.Event()

    def offer(self, event: Event) -> None:
        if self._closed:
            return
        events = self._events
        if len(events) >= SUBSCRIBER_CAPACITY and isinstance(event, DELTAS):
            if events and (merged := _merged(events[-1], event)) is not None:
                events[-1] = merged
            elif events and isinstance(events[-1], Lagged):
                events[-1] = attrs.evolve(events[-1], dropped=events[-1].dropped + 1)
            else:
                events.append(self._bus.make(Lagged, dropped=1, closed=False))
            return
        if len(events) >= SUBSCRIBER_HARD_LIMIT:
            events.append(self._bus.make(Lagged, dropped=0, closed=True))
            self.close()
            return
        events.append(event)
        self._arrived.set()

    def close(self) -> None:
        self._closed = True
        self._arrived.set()

    def receive_nowait(self) -> Event:
        if self._events:
            return self._events.popleft()
        if self._closed:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    async def receive(self) -> Event:
        while True:
            try:
                event = self.receive_nowait()
            except trio.WouldBlock:
                self._arrived = trio.Event()
                await self._arrived.wait()
                continue
            await trio.lowlevel.checkpoint()
            return event

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None


class EventBus:
    """Numbers an agent's events and hands each to every subscriber.

    Emitting never blocks the agent and builds nothing when nobody
    subscribes; each subscriber's buffer is bounded (see ``Subscription``).
    """

    def __init__(self, agent_id: str, session_id: str) -> None:
        self._agent_id = agent_id
        self._session_id = session_id
        self._seq = 0
        self._subscribers: list[Subscription] = []
        self._closed = False

    @property
    def seq(self) -> int:
        """The seq of the latest event."""
        return self._seq

    def make(self, event_type: type[Event], **fields: Any) -> Event:
        """An event of this agent stamped with the current seq (for events a
        subscription makes up itself, which take no seq of their own)."""
        return event_type(
            agent_id=self._agent_id,
            session_id=self._session_id,
            seq=self._seq,
            time=trio.current_time(),
            **fields,
        )

    def emit(self, event_type: type[Event], **fields: Any) -> None:
        self._seq += 1
        if not self._subscribers:
            return  # nobody listens: build nothing, but keep counting
        event = self.make(event_type, **fields)
        for subscriber in self._subscribers:
            subscriber.offer(event)

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Subscription]:
        subscription = Subscription(self)
        if self._closed:
            subscription.close()
        else:
            self._subscribers.append(subscription)
        try:
            yield subscription
        finally:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)
            subscription.close()

    def close(self) -> None:
        """End every subscriber's iteration once it has read what waits."""
        self._closed = True
        for subscription in self._subscribers:
            subscription.close()
        self._subscribers.clear()
