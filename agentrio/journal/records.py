"""The records of a session's journal.

A session is its journal: every state change is one record, appended before
memory changes, and every piece of state (history, inbox, turn boundary,
usage) is a projection of the records.
"""

from __future__ import annotations

import hashlib
from typing import ClassVar

import attrs

from ..mailbox.items import InboxSpliced
from ..messages import Message, ToolResultMessage, Usage, UserMessage, register_tagged_union


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
class ToolCallFinished:
    """A call's result, recorded (and made durable) the moment it finished,
    before it can be committed in model order: after a crash it is
    recovered as it was."""

    result: ToolResultMessage

    type: ClassVar[str] = "tool_call_finished"


@attrs.frozen
class Compacted:
    """History before ``first_kept`` (an index into the committed history)
    is replaced by ``summary``; the records that wrote it stay in the
    journal. ``usage`` is what the summary request cost; the token counts
    are estimates of the context before and after."""

    summary: UserMessage
    first_kept: int
    reason: str
    tokens_before: int
    tokens_after: int
    usage: Usage = attrs.field(factory=Usage)

    type: ClassVar[str] = "compacted"


@attrs.frozen
class ActorFailed:
    """The agent itself failed; ``restarted`` when it was restored and went on."""

    error: str
    restarted: bool = False

    type: ClassVar[str] = "actor_failed"


@attrs.frozen
class StepEnded:
    step: int

    type: ClassVar[str] = "step_ended"


@attrs.frozen
class TurnEnded:
    turn: int
    stop_reason: str
    #: Who cancelled the turn, when it was aborted (``"crash"``: crash
    #: repair closed it, see ``repair.CRASH``).
    cancel_cause: str | None = None
    #: What went wrong, when the stop reason is an error.
    error: str | None = None

    type: ClassVar[str] = "turn_ended"


@attrs.frozen
class RolledBack:
    """Committed history from message ``first`` on is taken back (a failed
    turn, with ``on_failure="rollback"``): history is as it was before it.
    The records that wrote those messages stay in the journal, so a fork at
    the turn they ended gets them back."""

    first: int
    #: The turn whose messages were taken back.
    turn: int = 0

    type: ClassVar[str] = "rolled_back"


@attrs.frozen
class StateEntered:
    """The step state machine entered state ``name`` (``build_context``,
    ``call_model``, ..., ``done``): its transitions are durable, so a
    restored session knows where its last step was."""

    name: str

    type: ClassVar[str] = "state"


@attrs.frozen
class RequestFailed:
    """A model request failed without a word (its stop reason is ``error``,
    or ``context_overflow``): history gets no empty message, the journal
    this marker, saying why."""

    error: str
    stop_reason: str = "error"

    type: ClassVar[str] = "request_failed"


@attrs.frozen
class GoalSet:
    """A goal the agent keeps starting turns for (``Agent.set_goal``), at
    most ``max_turns`` of them (None: until it is met)."""

    text: str
    max_turns: int | None = None

    type: ClassVar[str] = "goal_set"


@attrs.frozen
class GoalEnded:
    """The goal ended: ``met``, ``max_turns``, or the stop reason of the
    turn that did not complete; ``turns`` it took."""

    reason: str
    turns: int

    type: ClassVar[str] = "goal_ended"


@attrs.frozen
class SystemPromptSet:
    """The system prompt the session's requests are built on from here on
    (before any ``prepare_context`` hook), written once per change; a
    restored session goes on with it. ``digest``: ``prompt_digest(prompt)``."""

    prompt: str
    digest: str

    type: ClassVar[str] = "system_prompt_set"


#: The longest title a session may be given.
MAX_TITLE = 200


@attrs.frozen
class SessionRenamed:
    """The session's title, as someone chose it: the last one counts (a
    session never renamed is known by its first prompt)."""

    title: str

    type: ClassVar[str] = "session_renamed"


def prompt_digest(prompt: str) -> str:
    """A short hash naming a system prompt."""
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]


Record = (
    InboxSpliced
    | TurnStarted
    | StepStarted
    | MessageAppended
    | ToolCallStarted
    | ToolCallFinished
    | Compacted
    | ActorFailed
    | StepEnded
    | TurnEnded
    | RolledBack
    | SystemPromptSet
    | StateEntered
    | GoalSet
    | GoalEnded
    | RequestFailed
    | SessionRenamed
)

register_tagged_union(Record, "type")
