"""Journals written by hand, for the store tests."""

from __future__ import annotations

from agentrio import AssistantMessage, Text, ToolCall, ToolResultMessage, Usage, UserMessage
from agentrio.journal.records import (
    InboxSpliced,
    MessageAppended,
    Record,
    StepEnded,
    StepStarted,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from agentrio.mailbox import QueuedInput


def tool_turn(turn: int, step: int, prompt: str = "go") -> list[Record]:
    """One turn as the agent writes it: a prompt, a tool call, a final answer."""
    queued = QueuedInput(f"in_{turn}", UserMessage(prompt))
    call = ToolCall(f"call_{turn}", "echo", {"text": prompt})
    return [
        InboxSpliced("next_turn", 0, 0, [queued], "send"),
        TurnStarted(turn),
        InboxSpliced("next_turn", 0, 1, [], "claim"),
        StepStarted(step),
        MessageAppended(queued.message),
        MessageAppended(AssistantMessage([call], usage=Usage(10, 2))),
        ToolCallStarted(call.id),
        MessageAppended(ToolResultMessage(call.id, "echo", [Text(f"echo: {prompt}")])),
        StepEnded(step),
        StepStarted(step + 1),
        MessageAppended(AssistantMessage([Text(f"done {turn}")], usage=Usage(12, 3))),
        StepEnded(step + 1),
        TurnEnded(turn, "completed"),
    ]


def tool_turns(count: int) -> list[Record]:
    return [
        record for turn in range(1, count + 1) for record in tool_turn(turn, 2 * turn - 1, f"prompt {turn}")
    ]
