"""Hypothesis strategies for journals a correct agent could write."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from agentrio import AssistantMessage, Text, ToolCall, ToolResultMessage, Usage, UserMessage
from agentrio.actors.compaction import choose_cut
from agentrio.journal.projection import SessionState
from agentrio.journal.records import (
    Compacted,
    InboxSpliced,
    MessageAppended,
    Record,
    RolledBack,
    StepEnded,
    StepStarted,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from agentrio.mailbox import TARGETS, QueuedInput

from ..strategies import assistant_messages, user_messages


@st.composite
def journals(draw, max_turns: int = 4) -> list[Record]:
    """Turns of steps with tool calls (started or not, answered or not) and
    inbox traffic and compactions, cut off anywhere: the log of a run that
    may have crashed."""
    state = SessionState()
    records: list[Record] = []
    ids = itertools.count()

    def add(record: Record) -> None:
        state.apply(record)
        records.append(record)

    def send() -> None:
        target = draw(st.sampled_from(TARGETS))
        queue = state.queue(target)
        item = QueuedInput(f"in_{next(ids)}", draw(user_messages))
        add(InboxSpliced(target, draw(st.integers(0, len(queue))), 0, [item], "send"))

    def compact() -> None:
        """Before a request or between turns, as an agent compacts."""
        cut = choose_cut(state.messages, draw(st.integers(1, 40)), floor=state.summary is not None)
        if cut is not None and draw(st.booleans()):
            add(Compacted(UserMessage(f"summary {next(ids)}"), cut, "threshold", 9, 3, Usage(5, 1)))

    for turn in range(1, draw(st.integers(0, max_turns)) + 1):
        compact()
        for _ in range(draw(st.integers(0, 2))):
            send()
        add(TurnStarted(turn))
        start, summary = len(state.messages), state.summary
        if state.next_turn:
            add(InboxSpliced("next_turn", 0, 1, [], "claim"))
        for _ in range(draw(st.integers(1, 3))):
            add(StepStarted(state.step + 1))
            if draw(st.booleans()):
                add(MessageAppended(draw(user_messages)))
            compact()
            message = draw(assistant_messages)
            calls = [ToolCall(f"call_{next(ids)}", "tool", {}) for _ in range(draw(st.integers(0, 3)))]
            add(MessageAppended(AssistantMessage([*message.content, *calls], usage=message.usage)))
            for call in calls:
                if draw(st.booleans()):
                    add(ToolCallStarted(call.id))
                    if draw(st.booleans()):
                        add(MessageAppended(ToolResultMessage(call.id, call.name, [Text("ok")])))
            add(StepEnded(state.step))
        add(TurnEnded(turn, "completed"))
        if state.summary is summary and len(state.messages) > start and draw(st.booleans()):
            add(RolledBack(start, turn))  # a failed turn, with on_failure="rollback"
    return records[: draw(st.integers(0, len(records)))]
