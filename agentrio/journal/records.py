"""The records of a session's journal.

A session is its journal: every state change is one record, appended before
memory changes, and every piece of state (history, inbox, turn boundary,
usage) is a projection of the records.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import attrs

from ..messages import Message, UserMessage, register_tagged_union

Target = Literal["next_step", "next_turn"]
TARGETS: tuple[Target, ...] = ("next_step", "next_turn")

#: Why the inbox changed. ``remove`` and ``clear`` discard input; a ``claim``
#: hands it to a turn.
SpliceReason = Literal["send", "claim", "remove", "clear", "restore"]
DISCARDING_REASONS = frozenset({"remove", "clear"})


@attrs.frozen
class QueuedInput:
    """A message waiting in the inbox; ``id`` is unique across both queues."""

    id: str
    message: UserMessage


@attrs.frozen
class InboxSpliced:
    """``queue[start:start + delete_count] = items`` on one queue, with the
    range already normalized."""

    target: Target
    start: int
    delete_count: int
    items: list[QueuedInput]
    reason: SpliceReason

    type: ClassVar[str] = "inbox_spliced"

    @property
    def discards(self) -> bool:
        return self.reason in DISCARDING_REASONS


@attrs.frozen
class TurnStarted:
    turn: int

    type: ClassVar[str] = "turn_started"


@attrs.frozen
class StepStarted:
    step: int

    type: ClassVar[str] = "step_started"


@attrs.frozen
class MessageAppended:
    message: Message

    type: ClassVar[str] = "message_appended"


@attrs.frozen
class ToolCallStarted:
    """Written, and made durable, before a tool's body runs."""

    tool_call_id: str

    type: ClassVar[str] = "tool_call_started"


@attrs.frozen
class StepEnded:
    step: int

    type: ClassVar[str] = "step_ended"


@attrs.frozen
class TurnEnded:
    turn: int
    stop_reason: str

    type: ClassVar[str] = "turn_ended"


Record = (
    InboxSpliced
    | TurnStarted
    | StepStarted
    | MessageAppended
    | ToolCallStarted
    | StepEnded
    | TurnEnded
)

register_tagged_union(Record, "type")
