"""The runtime's own stream: agents created, ended, failed, restarted.

Hosts learn of agents as they come and go without polling the registry
(dsh 7.2: publication announces the agent). Two ways to listen:
``Runtime.subscribe()`` (an async iterator, bounded), and
``AgentRegistry.listen(fn)`` (a synchronous callback, called as the event
happens; it must not block or raise).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from ..events import Event, Lagged

if TYPE_CHECKING:
    from ..actors.agent import Agent

#: Events that may wait for one runtime subscriber; past that it gets a
#: ``lagged`` event counting what it missed (``dropped``), then live events.
RUNTIME_SUBSCRIBER_CAPACITY = 1024

Listener = Callable[[Event], None]


class RuntimeSubscription:
    """One subscriber of the runtime's stream: ``async for event in it``.

    Events arrive in ``seq`` order. While the reader keeps up it gets every
    one; once ``RUNTIME_SUBSCRIBER_CAPACITY`` wait, newer ones are dropped,
    and after reading what waits the reader gets a ``lagged`` event whose
    ``dropped`` says how many, then live events again. Iteration ends when
    the Runtime closes.
    """

    def __init__(self) -> None:
        self._events: deque[Event] = deque()
        self._dropped = 0
        self._last_seq = 0
        self._closed = False
        self._changed = trio.lowlevel.ParkingLot()

    def offer(self, event: Event) -> None:
        if len(self._events) >= RUNTIME_SUBSCRIBER_CAPACITY or self._dropped:
            self._dropped += 1
        else:
            self._events.append(event)
        self._last_seq = event.seq
        self._changed.unpark_all()

    def close(self) -> None:
        self._closed = True
        self._changed.unpark_all()

    def __aiter__(self) -> RuntimeSubscription:
        return self

    async def __anext__(self) -> Event:
        while not self._events and not self._dropped:
            if self._closed:
                raise StopAsyncIteration
            await self._changed.park()
        await trio.lowlevel.checkpoint()
        if self._events:
            return self._events.popleft()
        dropped, self._dropped = self._dropped, 0
        return Lagged(
            agent_id="", session_id="", seq=self._last_seq, time=trio.current_time(), dropped=dropped
        )


class RuntimeEvents:
    """Numbers the runtime's lifecycle events and hands each to every
    subscriber and listener. Emitting never blocks; with nobody listening it
    builds nothing."""

    def __init__(self) -> None:
        self._seq = 0
        self._subscribers: list[RuntimeSubscription] = []
        self._listeners: list[Listener] = []

    def emit(self, event_type: Callable[..., Event], agent: Agent, **fields: Any) -> None:
        self._seq += 1
        if not self._subscribers and not self._listeners:
            return
        event = event_type(
            agent_id=agent.id,
            session_id=agent.session_id,
            seq=self._seq,
            time=trio.current_time(),
            name=agent.spec.name,
            parent_id=agent.parent_id,
            **fields,
        )
        for subscriber in self._subscribers:
            subscriber.offer(event)
        for listener in list(self._listeners):
            listener(event)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event from now on; returns the
        function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[RuntimeSubscription]:
        subscription = RuntimeSubscription()
        self._subscribers.append(subscription)
        try:
            yield subscription
        finally:
            self._subscribers.remove(subscription)
            subscription.close()

    def close(self) -> None:
        """End every subscription once its reader has read what waits."""
        for subscription in self._subscribers:
            subscription.close()
