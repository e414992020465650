"""Session state as a projection of the journal."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ..mailbox.items import InboxSpliced, QueuedInput, Target
from ..messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    unanswered_calls,
)
from .records import (
    ActorFailed,
    Compacted,
    GoalEnded,
    GoalSet,
    MessageAppended,
    Record,
    RequestFailed,
    RolledBack,
    SessionRenamed,
    StateEntered,
    StepEnded,
    StepStarted,
    SystemPromptSet,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)


class JournalCorrupt(Exception):
    """The records cannot have been written by a correct agent."""


@attrs.define
class SessionState:
    """Everything a session knows, folded from its records.

    History is committed a step at a time: the messages of an open step wait
    in ``step_messages`` until the step ends, so ``messages`` is always a
    history the agent finished writing. Messages appended outside a step (a
    fork's seed) are committed at once. Either way ``messages`` is the
    compaction ``summary`` (when there was one) followed by the journal's
    ``MessageAppended`` records from the ``replaced``-th on, in order, less
    those in the ``rolled_back`` ranges, and ``step_messages`` the rest:
    snapshots rely on it.
    """

    messages: list[Message] = attrs.field(factory=list)
    step_messages: list[Message] = attrs.field(factory=list)
    next_step: list[QueuedInput] = attrs.field(factory=list)
    next_turn: list[QueuedInput] = attrs.field(factory=list)
    turn: int = 0
    step: int = 0
    turn_open: bool = False
    step_open: bool = False
    #: Calls of the open step whose body has started.
    started_calls: set[str] = attrs.field(factory=set)
    #: Results of the open step that finished but wait for their turn in
    #: model order, by call id.
    finished_results: dict[str, ToolResultMessage] = attrs.field(factory=dict)
    usage: Usage = attrs.field(factory=Usage)
    #: The latest compaction's summary, ``messages[0]`` when set, and how
    #: many message records it stands for.
    summary: UserMessage | None = None
    replaced: int = 0
    #: Ranges ``[start, end)`` of message records (from the ``replaced``-th
    #: on) that a rollback took back out of history, in order.
    rolled_back: list[tuple[int, int]] = attrs.field(factory=list)
    #: The goal being pursued (None: none), its turn budget and the turns
    #: it has taken so far.
    goal: str | None = None
    goal_max_turns: int | None = None
    goal_turns: int = 0
    #: The state the step state machine entered last (None: never ran).
    machine_state: str | None = None
    #: The system prompt journaled last (None: none yet), and its digest.
    system_prompt: str | None = None
    system_prompt_digest: str | None = None
    #: The title the session was last renamed to (None: never renamed).
    title: str | None = None
    #: Ids pending in either queue, derived from them (rebuilt when None, as
    #: after decoding a snapshot), so a splice checks uniqueness in O(items).
    _pending_ids: set[str] | None = attrs.field(default=None, init=False, repr=False, eq=False)

    @classmethod
    def replay(cls, records: Iterable[Record]) -> SessionState:
        state = cls()
        for record in records:
            state.apply(record)
        return state

    @property
    def message_records(self) -> int:
        """How many message records the committed history reaches to."""
        taken = sum(end - start for start, end in self.rolled_back)
        return self.replaced + len(self.messages) - (self.summary is not None) + taken

    def written_by(self, record: int) -> Message | None:
        """The message that the ``record``-th message record (counting from
        0) wrote, while history holds it: committed, or in the open step.
        None for a message a compaction replaced or a rollback took back, or
        a record not written."""
        committed = self.message_records
        if record >= committed:
            index = record - committed
            return self.step_messages[index] if index < len(self.step_messages) else None
        head = self.summary is not None
        index = record - self.replaced + head
        for start, end in self.rolled_back:
            if record < start:
                break
            if record < end:
                return None
            index -= end - start
        return self.messages[index] if index >= head else None

    def kept_records(self, first: int, count: int) -> list[int]:
        """Which of the ``count`` message records from the ``first``-th on
        history holds (the others a rollback took back), as offsets from it."""
        dropped = {r for start, end in self.rolled_back for r in range(start, end)}
        return [r - first for r in range(first, first + count) if r not in dropped]

    def _record_of(self, index: int) -> int:
        """The message record that wrote ``messages[index]`` (the record the
        next message would take, for ``len(messages)``)."""
        record = self.replaced + index - (self.summary is not None)
        for start, end in self.rolled_back:
            if start <= record:
                record += end - start
        return record

    def open_calls(self) -> list[ToolCall]:
        """Calls of the open step that have no result yet, in model order."""
        return unanswered_calls(self.step_messages)

    def queue(self, target: Target) -> list[QueuedInput]:
        return self.next_step if target == "next_step" else self.next_turn

    def apply(self, record: Record) -> None:
        # (Cases in order of how often a turn writes them.)
        match record:
            case MessageAppended(message=message):
                if isinstance(message, AssistantMessage):
                    self.usage = self.usage + message.usage
                (self.step_messages if self.step_open else self.messages).append(message)
            case ToolCallStarted(tool_call_id=call_id):
                self.started_calls.add(call_id)
            case GoalSet(text=text, max_turns=max_turns):
                self.goal, self.goal_max_turns, self.goal_turns = text, max_turns, 0
            case GoalEnded():
                self.goal = None
            case StateEntered(name=name):
                self.machine_state = name
            case StepStarted(step=step):
                self.step, self.step_open = step, True
            case StepEnded():
                self.messages.extend(self.step_messages)
                self.step_messages.clear()
                self.started_calls.clear()
                self.finished_results.clear()
                self.step_open = False
            case InboxSpliced():
                self._splice(record)
            case TurnStarted(turn=turn):
                self.turn, self.turn_open = turn, True
            case TurnEnded():
                self.turn_open = False
                if self.goal is not None:
                    self.goal_turns += 1
            case ToolCallFinished(result=result):
                self.finished_results[result.tool_call_id] = result
            case Compacted(summary=summary, first_kept=first_kept, usage=usage):
                if not 0 < first_kept <= len(self.messages):
                    raise JournalCorrupt(
                        f"compaction up to message {first_kept} of a history of {len(self.messages)}"
                    )
                self.replaced = self._record_of(first_kept)
                self.rolled_back = [r for r in self.rolled_back if r[0] >= self.replaced]
                self.summary = summary
                self.messages[:first_kept] = [summary]
                self.usage = self.usage + usage
            case ActorFailed() | RequestFailed():
                pass
            case SessionRenamed(title=title):
                self.title = title
            case SystemPromptSet(prompt=prompt, digest=digest):
                self.system_prompt, self.system_prompt_digest = prompt, digest
            case RolledBack(first=first):
                head = self.summary is not None
                if self.step_open or not head <= first <= len(self.messages):
                    raise JournalCorrupt(f"rollback to message {first} of a history of {len(self.messages)}")
                start, end = self._record_of(first), self.message_records
                if start < end:
                    # Ranges inside the new one are part of it.
                    self.rolled_back = [r for r in self.rolled_back if r[0] < start]
                    self.rolled_back.append((start, end))
                    del self.messages[first:]
            case _:
                raise JournalCorrupt(f"unknown record {record!r}")

    def _splice(self, record: InboxSpliced) -> None:
        queue = self.queue(record.target)
        start, count = record.start, record.delete_count
        if not (0 <= start <= len(queue) and 0 <= count <= len(queue) - start):
            raise JournalCorrupt(
                f"inbox splice [{start}:{start + count}] outside {record.target} of length {len(queue)}"
            )
        if self._pending_ids is None:
            self._pending_ids = {q.id for q in (*self.next_step, *self.next_turn)}
        pending = self._pending_ids
        removed = {q.id for q in queue[start : start + count]}
        inserted: set[str] = set()
        for item in record.items:
            if (item.id in pending and item.id not in removed) or item.id in inserted:
                raise JournalCorrupt(f"inbox message id {item.id!r} is already pending")
            inserted.add(item.id)
        pending -= removed
        pending |= inserted
        queue[start : start + count] = record.items
