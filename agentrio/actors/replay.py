"""What a subscriber resumes from after a seq it has seen
(``agent.subscribe(since=seq)``, and a subscriber that fell behind): the
agent's recent events (``ReplayLog``) and, for what the log no longer holds,
the seq of the ``message_end`` of each message the journal holds
(``MessageSeqs``)."""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from ..events import Event, MessageUpdate, ToolExecutionUpdate
from ..models.events import TextDelta, ThinkingDelta

#: Entries the log keeps (a run of deltas that continue each other is one).
REPLAY_CAPACITY = 4096
#: The most text one run of deltas keeps; later pieces of that run are left
#: out of the log (and counted in a ``lagged`` event on replay), so whatever
#: a tool prints, the log's memory is bounded. ``message_end`` and
#: ``tool_execution_end`` still carry the whole message or result.
COALESCED_TEXT_LIMIT = 64 * 1024

#: The events a run of text may coalesce; ``ReplayLog.add`` appends every
#: other event to ``entries`` as it is.
DELTA_TYPES = frozenset((MessageUpdate, ToolExecutionUpdate))


#: The deltas of a ``message_update`` that a later one may continue.
_TEXT_DELTAS = frozenset((TextDelta, ThinkingDelta))


def continues(earlier: Event, later: Event) -> bool:
    """Whether delta ``later`` goes on with the same text as ``earlier``."""
    if isinstance(earlier, MessageUpdate) and isinstance(later, MessageUpdate):
        a, b = earlier.delta, later.delta
        if isinstance(a, TextDelta) and isinstance(b, TextDelta):
            return a.index == b.index
        if isinstance(a, ThinkingDelta) and isinstance(b, ThinkingDelta):
            return a.index == b.index and not (a.signature or b.signature)
        return False
    if isinstance(earlier, ToolExecutionUpdate) and isinstance(later, ToolExecutionUpdate):
        a, b = earlier.progress, later.progress
        return (
            earlier.tool_call_id == later.tool_call_id
            and _is_output(a)
            and _is_output(b)
            and a["stream"] == b["stream"]
        )
    return False


def _is_output(progress: Any) -> bool:
    return isinstance(progress, dict) and progress.keys() == {"stream", "text"}


def is_text_delta(event: Event) -> bool:
    """Whether ``event`` is a piece of text that a later piece may continue
    (``message_update`` of text or thinking, a tool's output)."""
    if type(event) is MessageUpdate:
        delta = event.delta
        return type(delta) is TextDelta or (type(delta) is ThinkingDelta and not delta.signature)
    return type(event) is ToolExecutionUpdate and _is_output(event.progress)


def delta_text(event: Event) -> str:
    """The text a delta that ``continues`` another carries."""
    if isinstance(event, MessageUpdate):
        delta = event.delta
        assert isinstance(delta, TextDelta | ThinkingDelta)  # (text continues text)
        return delta.text
    assert isinstance(event, ToolExecutionUpdate)
    text: str = event.progress["text"]
    return text


def with_text(event: Event, text: str, seq: int) -> Event:
    """``event`` carrying ``text`` instead of its own, numbered ``seq``."""
    if isinstance(event, MessageUpdate):
        delta = event.delta
        assert isinstance(delta, TextDelta | ThinkingDelta)  # (text continues text)
        return attrs.evolve(event, seq=seq, delta=attrs.evolve(delta, text=text))
    assert isinstance(event, ToolExecutionUpdate)
    return attrs.evolve(event, seq=seq, progress={"stream": event.progress["stream"], "text": text})


@attrs.define
class _Run:
    """Deltas with consecutive seqs that continue each other, kept as their
    pieces of text: the first ``len(pieces)`` from ``first.seq`` on, then
    ``dropped`` more past the text limit, up to ``last_seq``."""

    first: Event
    pieces: list[str]
    size: int
    last_seq: int
    dropped: int = 0

    def add(self, event: Event) -> None:
        text = delta_text(event)
        self.last_seq = event.seq
        if self.dropped or self.size + len(text) > COALESCED_TEXT_LIMIT:
            self.dropped += 1
        else:
            self.pieces.append(text)
            self.size += len(text)

    def after(self, since: int, make_lagged: Callable[..., Event]) -> list[Event]:
        """What of the run comes after seq ``since``: one delta with the rest
        of the kept text, and a ``lagged`` event counting the pieces left out."""
        out: list[Event] = []
        seen = max(0, since - self.first.seq + 1)
        if seen < len(self.pieces):
            kept_last = self.first.seq + len(self.pieces) - 1
            out.append(with_text(self.first, "".join(self.pieces[seen:]), kept_last))
        left_out = min(self.dropped, self.last_seq - since)
        if left_out > 0:
            out.append(make_lagged(dropped=left_out, seq=self.last_seq))
        return out


class ReplayLog:
    """The latest ``REPLAY_CAPACITY`` events of an agent, in seq order, from
    the moment the log was started (the agent's first subscription).

    Guarantees: ``after(since)`` gives every lifecycle event (everything but
    ``message_update`` and ``tool_execution_update``) after ``since`` that the
    log still holds, in order; the deltas among them come coalesced (each run
    of deltas that continue each other as one, holding the text the reader
    has not seen yet, up to ``COALESCED_TEXT_LIMIT``; what is left out is
    counted in a ``lagged`` event). Every event after ``lost_through`` is
    held; what came at or before it is for the journal to replay
    (``MessageSeqs``). Memory is bounded by the capacity and the text limit,
    whatever the agent emits.
    """

    def __init__(self, started_after: int, make_lagged: Callable[..., Event]) -> None:
        #: Events up to this seq were emitted before the log started.
        self._started_after = started_after
        #: Every event since, in seq order with no gap (a run spans its
        #: seqs), so the oldest entry says what was evicted; appending to
        #: a full deque evicts the oldest.
        self.entries: deque[Event | _Run] = deque(maxlen=REPLAY_CAPACITY)
        self._make_lagged = make_lagged

    @property
    def lost_through(self) -> int:
        """The latest seq the log does not hold: it holds every event after it."""
        if not self.entries:
            return self._started_after
        oldest = self.entries[0]
        return (oldest.first.seq if isinstance(oldest, _Run) else oldest.seq) - 1

    def add(self, event: Event) -> None:
        entries = self.entries
        entry: Event | _Run = event
        if type(event) in DELTA_TYPES:  # (events are final classes: no isinstance walk for the rest)
            if type(event) is MessageUpdate and type(event.delta) not in _TEXT_DELTAS:
                entries.append(event)  # a block's start or end, a call's arguments: nothing continues them
                return
            last = entries[-1] if entries else None
            if type(last) is _Run and last.last_seq == event.seq - 1 and continues(last.first, event):
                last.add(event)
                return
            if is_text_delta(event):
                entry = _Run(event, [], 0, event.seq - 1)
                entry.add(event)
        entries.append(entry)

    def after(self, since: int) -> tuple[int, list[Event]]:
        """``(missed, events)``: the events after seq ``since`` that the log
        holds, and how many seqs after ``since`` it no longer holds (0 when
        nothing is missing)."""
        missed = max(0, self.lost_through - since)
        out: list[Event] = []
        for entry in self.entries:
            if isinstance(entry, _Run):
                if entry.last_seq > since:
                    out += entry.after(since, self._make_lagged)
            elif entry.seq > since:
                out.append(entry)
        return missed, out


class MessageSeqs:
    """The seq of the ``message_end`` event that announced each message
    record of the session's journal, from the first one this process
    announced on: 8 bytes a message, kept whether or not anyone subscribes,
    so that a replay can stand in for ``message_end`` events the log no
    longer holds with the messages themselves.

    Record ``first + i`` was announced at ``seqs[i]``. A record journaled
    without an event of its own (a call's result that crash repair wrote)
    repeats the seq before it, which keeps the array sorted and tells it
    apart; records before ``first`` (history restored from the store, or
    repaired at start) have no seq here either.
    """

    __slots__ = ("_first", "_seqs")

    def __init__(self, first: int) -> None:
        self._first = first
        self._seqs = array("q")

    def add(self, record: int, seq: int) -> None:
        """Record ``record`` was announced by the event numbered ``seq``."""
        seqs = self._seqs
        index = record - self._first
        if index < len(seqs):
            return  # announced already, or before the first
        if index > len(seqs):
            seqs.extend([seqs[-1] if seqs else 0] * (index - len(seqs)))
        seqs.append(seq)

    def between(self, after: int, through: int) -> Iterator[tuple[int, int]]:
        """``(record, seq)`` of each record announced after seq ``after`` and
        at or before ``through``, in order."""
        seqs, first = self._seqs, self._first
        for index in range(bisect_right(seqs, after), bisect_right(seqs, through)):
            seq = seqs[index]
            if index == 0 or seqs[index - 1] != seq:
                yield first + index, seq
