"""Fan-out of an agent's events to its subscribers."""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from ..events import Event, Lagged, MessageEnd
from .replay import DELTA_TYPES, MessageSeqs, ReplayLog
from .stamp import STAMPERS

if TYPE_CHECKING:
    from ..journal import SessionState
    from ..messages import Message

#: Events a subscriber may have waiting. A subscriber further behind reads on
#: from the agent's replay (see ``Subscription``).
SUBSCRIBER_CAPACITY = 1024
#: trio's system clock class, whose time is its ``offset`` plus ``perf_counter``
#: (None if this trio has no such class: it is not a public name).
_SYSTEM_CLOCK = getattr(getattr(getattr(trio, "_core", None), "_run", None), "SystemClock", None)

#: A reader takes at most this many events from its buffer between two
#: checkpoints (see ``Subscription.receive``).
YIELD_EVERY = 64


class Subscription:
    """One subscriber's buffer: ``async for event in subscription``.

    Guarantees: events arrive in ``seq`` order, each once. While the reader
    keeps up it gets every event as it was emitted. Once
    ``SUBSCRIBER_CAPACITY`` events wait, the subscription stops buffering and
    the reader, having read what waits, gets a ``lagged`` event and then
    catches up (see ``EventBus``): every lifecycle event (everything but
    ``message_update`` and ``tool_execution_update``) the agent's replay log
    still holds, and the deltas coalesced, then live again, with no gap and
    no duplicate. Of a stretch the log no longer holds, the ``lagged`` event
    says how many seqs it had (``missed``) and the journal stands in for it:
    each message of history announced in it comes as its ``message_end``
    (``replayed``). Memory is bounded whether or not anyone reads: a
    catch-up takes at most ``SUBSCRIBER_CAPACITY`` events at a time.
    """

    def __init__(self, bus: EventBus, since: int | None = None) -> None:
        self._bus = bus
        self._events: deque[Event] = deque()
        self._closed = False
        #: The tasks waiting in ``receive`` for an event.
        self._waiting: list[trio.lowlevel.Task] = []
        #: Events taken since the reader last yielded.
        self._unyielded = 0
        #: Reading from the replay after this seq, not from live emits.
        self._behind_after: int | None = since
        #: The subscription fell behind its buffer: its catch-up starts with
        #: a ``lagged`` event even when the log holds everything.
        self._fell_behind = False
        #: Replaying the journal's messages up to this seq (the log held
        #: nothing at or before it when the ``lagged`` event was made).
        self._journal_through: int | None = None

    def __len__(self) -> int:
        """Events waiting in the buffer (a reader that fell behind has more
        to read from the replay)."""
        return len(self._events)

    @property
    def reader_waiting(self) -> bool:
        """Whether a task waits in ``receive`` (so it has read everything)."""
        return bool(self._waiting)

    def _catch_up(self, after: int) -> None:
        """Buffer what comes after seq ``after``, at most about
        ``SUBSCRIBER_CAPACITY`` events: what the journal stands in for, then
        what the log holds; live again once the log has given all it holds."""
        bus, events, room = self._bus, self._events, SUBSCRIBER_CAPACITY
        while True:
            if self._journal_through is None:
                lost = bus.lost_through
                if lost > after or self._fell_behind:
                    events.append(bus.make(Lagged, seq=after, missed=max(0, lost - after)))
                    self._fell_behind = False
                if lost <= after:
                    break
                self._journal_through = lost
            replayed = bus.committed(after, self._journal_through, room)
            events.extend(replayed)
            if len(replayed) == room:  # perhaps more: on from the last one next time
                self._behind_after = replayed[-1].seq
                return
            room -= len(replayed)
            # The log may have lost more since an earlier catch-up: round again.
            after, self._journal_through = self._journal_through, None
        missed, logged = bus.replay(after)
        assert not missed
        events.extend(logged[:room])
        if len(logged) > room:
            self._behind_after = logged[room - 1].seq
        else:
            self._behind_after = None  # live again: the log held everything up to now

    def close(self) -> None:
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        for task in self._waiting:
            trio.lowlevel.reschedule(task)
        self._waiting.clear()

    async def _wait(self) -> None:
        task = trio.lowlevel.current_task()
        self._waiting.append(task)

        def abort(_: object) -> trio.lowlevel.Abort:
            self._waiting.remove(task)
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def receive_nowait(self) -> Event:
        if not self._events and self._behind_after is not None:
            self._catch_up(self._behind_after)
        if self._events:
            return self._events.popleft()
        if self._closed:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    async def receive(self) -> Event:
        """The next event. It is a checkpoint (cancel point and yield to
        other tasks) whenever it waits, and once every ``YIELD_EVERY`` events
        it takes from the buffer, so a reader of a busy agent takes what
        waits in one go instead of paying a task switch, or a cancel check,
        per event. A cancelled reader is cancelled within ``YIELD_EVERY``
        reads, and the event it would have read waits for the next read."""
        return await self.__anext__(trio.EndOfChannel)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self, end: type[Exception] = StopAsyncIteration) -> Event:
        """``receive``, raising ``end`` once the subscription has ended
        (``async for`` reads through it with no call in between)."""
        while True:
            if self._events:
                event = self._events.popleft()
            else:
                blocked = False
                try:
                    event = self.receive_nowait()
                except trio.WouldBlock:
                    blocked = True
                except trio.EndOfChannel:
                    raise end from None
                if blocked:
                    # Waited for outside the handler, so that the exception
                    # and its traceback do not stay alive while the reader waits.
                    self._unyielded = 0
                    await self._wait()
                    continue
            self._unyielded += 1
            if self._unyielded >= YIELD_EVERY:
                self._unyielded = 0
                try:
                    await trio.lowlevel.checkpoint()
                except BaseException:
                    self._events.appendleft(event)  # taken by the next read
                    raise
            return event


class EventBus:
    """Numbers an agent's events and hands each to every subscriber.

    Emitting never blocks the agent and builds nothing until someone
    subscribes. From the first subscription on, every event also goes to the
    agent's ``ReplayLog``. Whether or not anyone subscribes, the bus notes
    the seq of each ``message_end`` beside the message's place in the
    journal (``MessageSeqs``; ``history`` is the session's projected state).
    So a subscriber can resume after any seq it has seen
    (``subscribe(since=seq)``): from the log, and, for what the log no
    longer holds, with the messages of that stretch that history still
    holds, each as a ``message_end`` with the seq of the one it stands for.
    Each subscriber's buffer is bounded (see ``Subscription``).
    """

    def __init__(self, agent_id: str, session_id: str) -> None:
        self._agent_id = agent_id
        self._session_id = session_id
        self._seq = 0
        self._subscribers: list[Subscription] = []
        self._log: ReplayLog | None = None
        #: The log's entries, which every event but a delta is appended to.
        self._logged: deque[Any] = deque()
        #: ``time`` of an event is ``_clock() + _clock_offset`` (see ``_read_clock``).
        self._clock: Callable[[], float] = trio.current_time
        self._clock_offset = 0.0
        self._closed = False
        #: The session's state, whose messages ``message_end`` events announce
        #: (set by the agent; None: messages are not noted).
        self.history: SessionState | None = None
        self._message_seqs: MessageSeqs | None = None

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
            time=self._clock() + self._clock_offset,
            **fields,
        )

    def emit(self, event_type: type[Event], **fields: Any) -> None:
        self._seq += 1
        if event_type is MessageEnd and self.history is not None:
            self._announced(fields["message"])
        if self._log is None:
            return  # nobody has listened: build nothing, but keep counting
        event = STAMPERS[event_type](
            self._agent_id, self._session_id, self._seq, self._clock() + self._clock_offset, fields
        )
        if event_type in DELTA_TYPES:
            self._log.add(event)
        else:
            self._logged.append(event)  # (what ``ReplayLog.add`` does with it)
        # Into each subscriber's buffer, inline (an agent emits about sixty
        # events a turn, and this loop is the whole of their fan-out).
        for subscriber in self._subscribers:
            if subscriber._closed or subscriber._behind_after is not None:
                continue
            events = subscriber._events
            if len(events) >= SUBSCRIBER_CAPACITY:
                # Fall behind: read on from the replay after the last event held.
                subscriber._behind_after = events[-1].seq
                subscriber._fell_behind = True
            else:
                events.append(event)
            if subscriber._waiting:  # (a reader that is not waiting finds it without a wake-up)
                subscriber._wake()

    def _announced(self, message: Message) -> None:
        """Note the seq of the ``message_end`` of ``message``, which the
        journal has just taken (its latest message record, unless a few came
        after it)."""
        state = self.history
        assert state is not None  # (noted only while the history is followed)
        step = state.step_messages
        if step and step[-1] is message:  # (nearly always: the open step's latest)
            self._noted(state.message_records + len(step) - 1)
            return
        records = state.message_records + len(step)
        for back in range(min(records, 8)):
            if state.written_by(records - 1 - back) is message:
                self._noted(records - 1 - back)
                return

    def _noted(self, record: int) -> None:
        if self._message_seqs is None:
            self._message_seqs = MessageSeqs(record)
        self._message_seqs.add(record, self._seq)

    def _read_clock(self) -> None:
        """Read trio's clock through its own method, cheaper per event than
        trio's module-level lookup; the system clock (its offset plus
        ``perf_counter``) through ``perf_counter`` itself, which costs no
        Python call at all."""
        clock = trio.lowlevel.current_clock()
        offset = getattr(clock, "offset", None)
        if _SYSTEM_CLOCK is not None and type(clock) is _SYSTEM_CLOCK and isinstance(offset, float):
            self._clock, self._clock_offset = time.perf_counter, offset
        else:
            self._clock, self._clock_offset = clock.current_time, 0.0

    @property
    def lost_through(self) -> int:
        """The latest seq the replay log does not hold (``ReplayLog``)."""
        assert self._log is not None
        return self._log.lost_through

    def replay(self, since: int) -> tuple[int, list[Event]]:
        """``ReplayLog.after``: the events after ``since`` the log holds."""
        assert self._log is not None
        return self._log.after(since)

    def committed(self, after: int, through: int, limit: int) -> list[Event]:
        """The first ``limit`` messages that history holds among those whose
        ``message_end`` came after seq ``after`` and at or before
        ``through``, in order, each as a ``message_end`` (``replayed``) with
        the seq of the one it stands for."""
        seqs, state = self._message_seqs, self.history
        if seqs is None or state is None:
            return []
        out: list[Event] = []
        for record, seq in seqs.between(after, through):
            message = state.written_by(record)
            if message is not None:
                out.append(self.make(MessageEnd, seq=seq, message=message, replayed=True))
                if len(out) == limit:
                    break
        return out

    @asynccontextmanager
    async def subscribe(self, since: int | None = None) -> AsyncIterator[Subscription]:
        if since is not None and not (isinstance(since, int) and 0 <= since <= self._seq):
            raise ValueError(
                f"since={since!r}: expected the seq of an event of this agent, 0 to {self._seq} "
                "(seqs count from the agent's start in this process)"
            )
        if self._log is None:
            self._read_clock()
            self._log = ReplayLog(self._seq, functools.partial(self.make, Lagged))
            self._logged = self._log.entries
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
