"""What an agent tells its subscribers.

Every event carries the agent and session it comes from, ``seq`` (strictly
increasing per agent) and ``time`` (trio's clock). Events round-trip through
``agentrio.messages.converter`` as the ``Event`` union, tagged by ``type``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from .mailbox.items import QueuedInput, Target
from .messages import Message, ToolCall, ToolResultMessage, Usage, register_tagged_union
from .models.errors import ProviderError
from .models.events import StreamEvent


@attrs.frozen(kw_only=True)
class _Event:
    agent_id: str
    session_id: str
    seq: int
    time: float


@attrs.frozen(kw_only=True)
class AgentStart(_Event):
    #: The agent's name (its spec's), for a UI drawing several agents.
    name: str = ""

    type: ClassVar[str] = "agent_start"


@attrs.frozen(kw_only=True)
class AgentEnd(_Event):
    stop_reason: str
    new_messages: list[Message]
    usage: Usage
    turns: int
    error: str | None = None
    #: Model requests of the run.
    steps: int = 0
    #: Who cancelled the run, when it was aborted.
    cancel_cause: str | None = None

    type: ClassVar[str] = "agent_end"


@attrs.frozen(kw_only=True)
class TurnStart(_Event):
    turn: int

    type: ClassVar[str] = "turn_start"


@attrs.frozen(kw_only=True)
class TurnEnd(_Event):
    turn: int
    stop_reason: str
    cancel_cause: str | None = None
    #: The turn stopped owing the model its tool results: its last model
    #: message asked for tools and no answer to their results followed.
    has_more_tool_calls: bool = False
    #: How many messages of the failed turn were taken back out of history
    #: (``on_failure="rollback"``); the journal keeps them.
    rolled_back: int = 0

    type: ClassVar[str] = "turn_end"


@attrs.frozen(kw_only=True)
class StepStart(_Event):
    step: int

    type: ClassVar[str] = "step_start"


@attrs.frozen(kw_only=True)
class StepEnd(_Event):
    step: int
    #: The step's model message asked for tools: the model is owed their
    #: results (another step follows unless the turn stops).
    has_more_tool_calls: bool = False

    type: ClassVar[str] = "step_end"


@attrs.frozen(kw_only=True)
class State(_Event):
    """One transition of the step state machine."""

    name: str

    type: ClassVar[str] = "state"


@attrs.frozen(kw_only=True)
class Status(_Event):
    status: str

    type: ClassVar[str] = "status"


@attrs.frozen(kw_only=True)
class MessageStart(_Event):
    role: str
    #: The message itself when it is known at once (user input, tool results);
    #: None while an assistant message streams.
    message: Message | None = None
    #: For a streaming assistant message: the model request attempt it
    #: comes from (process-local; a retry or a repair is a new attempt).
    attempt: str | None = None

    type: ClassVar[str] = "message_start"


@attrs.frozen(kw_only=True)
class MessageUpdate(_Event):
    delta: StreamEvent
    #: The attempt of the streaming message (see ``MessageStart.attempt``).
    attempt: str | None = None

    type: ClassVar[str] = "message_update"


@attrs.frozen(kw_only=True)
class OutputUpdate(_Event):
    """What a typed answer (``AgentSpec.output_type``) says so far, as JSON
    data, each time it changes while the answer streams."""

    output: Any

    type: ClassVar[str] = "output_update"


@attrs.frozen(kw_only=True)
class MessageEnd(_Event):
    message: Message
    #: True when a replay made it from the journal, standing for a
    #: ``message_end`` the replay log no longer held: its seq is that one's,
    #: its time that of the replay.
    replayed: bool = False

    type: ClassVar[str] = "message_end"


@attrs.frozen(kw_only=True)
class MessageDiscard(_Event):
    """The assistant message streaming since the last ``message_start`` is
    withdrawn: it will be retried and never enters history."""

    reason: str
    #: The attempt withdrawn (see ``MessageStart.attempt``).
    attempt: str | None = None

    type: ClassVar[str] = "message_discard"


@attrs.frozen(kw_only=True)
class RequestRetry(_Event):
    error: ProviderError
    attempt: int
    delay: float

    type: ClassVar[str] = "request_retry"


@attrs.frozen(kw_only=True)
class ModelFallback(_Event):
    """A request failed on ``from_model`` past its retries with ``error``,
    and goes to ``to_model`` (see ``agentrio.FallbackModel``)."""

    from_model: str
    to_model: str
    error: ProviderError

    type: ClassVar[str] = "model_fallback"


@attrs.frozen(kw_only=True)
class CompactionStart(_Event):
    """History is about to be compacted: ``reason`` is ``threshold`` (the
    next request would pass ``Limits.compact_at``), ``overflow`` (the
    provider refused the request) or ``manual`` (``Agent.compact``).
    ``tokens_before`` estimates the context now."""

    reason: str
    tokens_before: int

    type: ClassVar[str] = "compaction_start"


@attrs.frozen(kw_only=True)
class CompactionEnd(_Event):
    """The compaction that started ended: ``messages_summarized`` messages
    were replaced by a summary, which cost ``usage``. When ``error`` is set
    it failed and history is unchanged (``tokens_after == tokens_before``)."""

    reason: str
    tokens_before: int
    tokens_after: int
    messages_summarized: int = 0
    usage: Usage = attrs.field(factory=Usage)
    error: str | None = None

    type: ClassVar[str] = "compaction_end"


@attrs.frozen(kw_only=True)
class ToolExecutionStart(_Event):
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    #: How the call was scheduled: ``parallel`` or ``exclusive``; None for a
    #: call that never ran (it was refused, invalid or cancelled first).
    mode: str | None = None

    type: ClassVar[str] = "tool_execution_start"


@attrs.frozen(kw_only=True)
class ToolExecutionUpdate(_Event):
    tool_call_id: str
    tool_name: str
    progress: Any

    type: ClassVar[str] = "tool_execution_update"


@attrs.frozen(kw_only=True)
class ToolExecutionEnd(_Event):
    tool_call_id: str
    tool_name: str
    is_error: bool
    result: ToolResultMessage
    #: Seconds from dispatch to completion; 0 for a call that never ran.
    duration: float = 0.0

    type: ClassVar[str] = "tool_execution_end"


@attrs.frozen(kw_only=True)
class SandboxDenied(_Event):
    """A sandbox refused a tool's command a path or a connection, as its
    error output tells (``tools.sandbox_denials``), so that a host can offer
    to allow it. ``kind`` is ``"path"`` (``target`` the real path) or
    ``"network"`` (``target`` ``host:port`` when known, else None); ``line``
    is the error line."""

    tool_call_id: str
    tool_name: str
    kind: str
    target: str | None
    line: str

    type: ClassVar[str] = "sandbox_denied"


@attrs.frozen(kw_only=True)
class ToolAbandoned(_Event):
    """A cancelled tool did not stop in time (a thread blocked in C, say): the
    run no longer waits for it, but the agent still supervises its worker
    until it ends. Its result says it was abandoned while still running."""

    tool_call_id: str
    tool_name: str

    type: ClassVar[str] = "tool_abandoned"


@attrs.frozen(kw_only=True)
class Lagged(_Event):
    """This subscriber fell behind and reads on from the agent's replay log:
    the deltas that follow come coalesced, and ``dropped`` of them (text or
    progress pieces past the log's text limit) were left out here; the
    ``message_end`` / ``tool_execution_end`` that follow still carry the
    whole message or result. ``missed``: how many seqs after this one's the
    log no longer held (a reader that far behind, or a ``since`` older than
    the log); the journal stands in for them: the messages of history
    announced among them follow first, each as its ``message_end``
    (``replayed``, with the seq it had), then what the log holds. Its
    ``seq`` is that of the last event before the gap."""

    dropped: int = 0
    missed: int = 0

    type: ClassVar[str] = "lagged"


@attrs.frozen(kw_only=True)
class AgentFailed(_Event):
    """The agent itself failed (not its model or a tool): ``restarted`` when it
    was restored from its journal, ``escalated`` when it stopped for good."""

    error: str
    restarted: bool = False
    escalated: bool = False
    #: The agent's name and parent (on the runtime's stream, ``rt.subscribe``).
    name: str = ""
    parent_id: str | None = None

    type: ClassVar[str] = "agent_failed"


@attrs.frozen(kw_only=True)
class StoreFailed(_Event):
    """The agent's store failed (``error`` says how): its work was stopped,
    its queued input stays queued, and it runs again once the store has
    recovered (``store_recovered``)."""

    error: str

    type: ClassVar[str] = "store_failed"


@attrs.frozen(kw_only=True)
class StoreRecovered(_Event):
    """The agent's store is usable again: the agent takes its queued input."""

    type: ClassVar[str] = "store_recovered"


@attrs.frozen(kw_only=True)
class Notice(_Event):
    """Something the host should know that is not an error. ``kind``
    ``system_prompt_differs``: a restored session goes on with the system
    prompt its journal holds, not the spec's, which differs."""

    kind: str
    text: str

    type: ClassVar[str] = "notice"


@attrs.frozen(kw_only=True)
class GoalStart(_Event):
    """``Agent.set_goal``: turns start by themselves until the goal ends."""

    text: str
    max_turns: int | None = None

    type: ClassVar[str] = "goal_start"


@attrs.frozen(kw_only=True)
class GoalEnd(_Event):
    """The goal ended: ``met`` (the model said so), ``max_turns``, or the
    stop reason of a turn that did not complete; after ``turns`` turns."""

    reason: str
    turns: int

    type: ClassVar[str] = "goal_end"


@attrs.frozen(kw_only=True)
class AgentCreated(_Event):
    """On the runtime's stream (``rt.subscribe``): an agent was published
    (its setup done). There, ``seq`` counts the runtime's events."""

    name: str
    parent_id: str | None = None

    type: ClassVar[str] = "agent_created"


@attrs.frozen(kw_only=True)
class AgentEnded(_Event):
    """On the runtime's stream: an agent was disposed (or stopped for good)
    and left the registry."""

    name: str
    parent_id: str | None = None

    type: ClassVar[str] = "agent_ended"


@attrs.frozen(kw_only=True)
class AgentRestarted(_Event):
    """On the runtime's stream: a failed agent was restored from its journal
    and goes on (after the ``agent_failed`` that says why)."""

    name: str
    parent_id: str | None = None

    type: ClassVar[str] = "agent_restarted"


@attrs.frozen(kw_only=True)
class ApprovalRequest(_Event):
    request_id: str
    call: ToolCall
    tool_name: str
    #: What the call would do, for a person: the command, the diff, the path.
    summary: str
    #: Why the policy asks, when it said.
    reason: str | None = None

    type: ClassVar[str] = "approval_request"


@attrs.frozen(kw_only=True)
class Inbox(_Event):
    target: Target
    reason: str
    inserted: list[QueuedInput]
    removed: list[QueuedInput]
    #: True when the removed input was discarded, not claimed by a turn.
    discarded: bool
    next_step: int
    next_turn: int

    type: ClassVar[str] = "inbox"


@attrs.frozen(kw_only=True)
class ChildEvent(_Event):
    """An event of a child agent, forwarded on its parent's stream.

    ``path`` holds the agent ids from the parent's direct child down to the
    agent that emitted ``event`` (``event.agent_id``), and ``names`` their
    names; ``child_id`` is the first id. Forwarding is flattened: ``event``
    is never a ``ChildEvent`` itself.
    """

    child_id: str
    path: list[str]
    names: list[str]
    event: Event

    type: ClassVar[str] = "child_event"


Event = (
    AgentStart
    | AgentEnd
    | TurnStart
    | TurnEnd
    | StepStart
    | StepEnd
    | State
    | Status
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | MessageDiscard
    | RequestRetry
    | ModelFallback
    | CompactionStart
    | CompactionEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | SandboxDenied
    | ToolAbandoned
    | OutputUpdate
    | Lagged
    | AgentFailed
    | StoreFailed
    | StoreRecovered
    | Notice
    | GoalStart
    | GoalEnd
    | AgentCreated
    | AgentEnded
    | AgentRestarted
    | ApprovalRequest
    | Inbox
    | ChildEvent
)

register_tagged_union(Event, "type")
