"""Fan-out of an agent's events to its subscribers."""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..events import Event, Lagged
from .replay import ReplayLog

#: Events a subscriber may have waiting. A subscriber further behind reads on
#: from the agent's replay log (see ``Subscription``).
SUBSCRIBER_CAPACITY = 1024


class Subscription:
    """One subscriber's buffer: ``async for event in subscription``.

    Guarantees: events arrive in ``seq`` order, each once. While the reader
    keeps up it gets every event as it was emitted. Once
    ``SUBSCRIBER_CAPACITY`` events wait, the subscription stops buffering and
    the reader, having read what waits, gets a ``lagged`` event and then
    continues from the agent's replay log (``ReplayLog``): every lifecycle
    event (everything but ``message_update`` and ``tool_execution_update``)
    and the deltas coalesced, then live again, with no gap and no duplicate.
    Only a reader so far behind that the log no longer holds what it missed
    loses events, and its ``lagged`` event says how many (``missed``).
    Memory is bounded whether or not anyone reads.
    """

    def __init__(self, bus: EventBus, since: int | None = None) -> None:
        self._bus = bus
        self._events: deque[Event] = deque()
        self._closed = False
        self._arrived = trio.Event()
        self._readers = 0
        #: Reading from the log after this seq, not from live emits.
        self._behind_after: int | None = since

    def __len__(self) -> int:
        """Events waiting to be read."""
        return len(self._events)

    @property
    def reader_waiting(self) -> bool:
        """Whether a task waits in ``receive`` (so it has read everything)."""
        return self._readers > 0

    def offer(self, event: Event) -> None:
        if self._closed or self._behind_after is not None:
            return
        events = self._events
        if len(events) >= SUBSCRIBER_CAPACITY:
            # Fall behind: read on from the log after the last event held.
            self._behind_after = events[-1].seq
            events.append(self._bus.make(Lagged, seq=events[-1].seq))
        else:
            events.append(event)
        self._arrived.set()

    def _catch_up(self, after: int) -> None:
        missed, events = self._bus.replay(after)
        if missed:
            self._events.append(self._bus.make(Lagged, seq=after, missed=missed))
        self._events.extend(events[:SUBSCRIBER_CAPACITY])
        if len(events) > SUBSCRIBER_CAPACITY:
            self._behind_after = events[SUBSCRIBER_CAPACITY - 1].seq
        else:
            self._behind_after = None  # live again: the log held everything up to now

    def close(self) -> None:
        self._closed = True
        self._arrived.set()

    def receive_nowait(self) -> Event:
        if not self._events and self._behind_after is not None:
            self._catch_up(self._behind_after)
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
                self._readers += 1
                try:
                    await self._arrived.wait()
                finally:
                    self._readers -= 1
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

    Emitting never blocks the agent and builds nothing until someone
    subscribes. From the first subscription on, every event also goes to the
    agent's ``ReplayLog``, so that a subscriber can resume after any seq it
    has seen (``subscribe(since=seq)``); each subscriber's buffer is bounded
    (see ``Subscription``).
    """

    def __init__(self, agent_id: str, session_id: str) -> None:
        self._agent_id = agent_id
        self._session_id = session_id
        self._seq = 0
        self._subscribers: list[Subscription] = []
        self._log: ReplayLog | None = None
        self._closed = False

    @property
    def seq(self) -> int:
        """The seq of the latest event."""
        return self._seq

    def make(self, event_type: type[Event], seq: int | None = None, **fields: Any) -> Event:
        """An event of this agent stamped with ``seq`` (default: the current
        seq; for events a subscription makes up itself, which take no seq of
        their own)."""
        return event_type(
            agent_id=self._agent_id,
            session_id=self._session_id,
            seq=self._seq if seq is None else seq,
            time=trio.current_time(),
            **fields,
        )

    def emit(self, event_type: type[Event], **fields: Any) -> None:
        self._seq += 1
        if self._log is None:
            return  # nobody has listened: build nothing, but keep counting
        event = self.make(event_type, **fields)
        self._log.add(event)
        for subscriber in self._subscribers:
            subscriber.offer(event)

    def replay(self, since: int) -> tuple[int, list[Event]]:
        """``ReplayLog.after``: the events after ``since`` the log holds."""
        assert self._log is not None
        return self._log.after(since)

    @asynccontextmanager
    async def subscribe(self, since: int | None = None) -> AsyncIterator[Subscription]:
        if since is not None and not (isinstance(since, int) and 0 <= since <= self._seq):
            raise ValueError(
                f"since={since!r}: expected the seq of an event of this agent, 0 to {self._seq} "
                "(seqs count from the agent's start in this process)"
            )
        if self._log is None:
            self._log = ReplayLog(self._seq, functools.partial(self.make, Lagged))
        subscription = Subscription(self, since if since is not None and since < self._seq else None)
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
