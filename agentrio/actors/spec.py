"""What an agent is made of, and what a run gives back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ..messages import Message, ToolCall, Usage
from ..models import Model, ProviderError, ToolSpec, from_string
from ..tools import Tool

if TYPE_CHECKING:
    from ..mailbox import QueuedInput
    from .agent import Agent

RunStopReason = Literal[
    "completed",
    "max_turns",
    "max_tool_calls",
    "timeout",
    "aborted",
    "permission_denied",
    "tool_error",
    "model_error",
    "max_tokens",
    "context_overflow",
    "blocked",
    "error",
]

Decision = Literal["allow", "deny", "ask"]
Permission = Callable[[ToolCall, Tool], "Decision | Awaitable[Decision]"]


def _positive(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{attribute.name} must be positive or None, got {value!r}")


@attrs.frozen
class Limits:
    """Per run: ``max_turns`` model requests (retries excluded),
    ``max_tool_calls`` executed tool calls, ``timeout`` seconds."""

    max_turns: int | None = attrs.field(default=None, validator=_positive)
    max_tool_calls: int | None = attrs.field(default=None, validator=_positive)
    timeout: float | None = attrs.field(default=None, validator=_positive)
    max_parallel_tool_calls: int = attrs.field(default=8, validator=_positive)


@attrs.define
class RequestContext:
    """What one model request is built from. ``prepare_context`` gets a fresh
    copy each time, so trimming it never touches history."""

    system_prompt: str
    messages: list[Message]
    tools: list[ToolSpec]


@attrs.frozen
class PreStep:
    """The input a step is about to admit (already claimed from the inbox)."""

    agent: Agent
    turn: int
    step: int
    input: list[QueuedInput]


@attrs.frozen
class Reject:
    """Returned by ``pre_step`` to end the turn ``blocked``. The rejected input
    is not re-queued unless the hook puts it back itself."""

    reason: str = ""


@attrs.frozen
class RequestError:
    """A failed model request, for ``on_request_error``. ``default_delay`` is
    what the model's own retry policy advises (None: give up)."""

    agent: Agent
    error: ProviderError
    attempt: int
    default_delay: float | None


MaybeAwaitable = Any


@attrs.frozen
class Hooks:
    """Optional callables, sync or async, that shape a run.

    - ``prepare_context(ctx: RequestContext) -> RequestContext | None``: per
      request, on a copy; return a replacement or edit it in place.
    - ``pre_step(step: PreStep) -> None | Reject | list[str | UserMessage]``:
      admit the input, block the turn, or admit something else instead.
    - ``on_request_error(err: RequestError) -> float | None``: seconds to
      wait before retrying, or None to fail the run.
    - ``turn_stopping(agent) -> None``: the turn is about to end; injecting
      next-step input makes it go on.
    - ``on_assistant_stream(event: StreamEvent) -> None``: observes the live
      model stream.
    """

    prepare_context: Callable[[RequestContext], MaybeAwaitable] | None = None
    pre_step: Callable[[PreStep], MaybeAwaitable] | None = None
    on_request_error: Callable[[RequestError], MaybeAwaitable] | None = None
    turn_stopping: Callable[[Agent], MaybeAwaitable] | None = None
    on_assistant_stream: Callable[[Any], MaybeAwaitable] | None = None


def _unique_tool_names(instance: Any, attribute: attrs.Attribute, tools: Sequence[Tool]) -> None:
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"tool names must be unique; repeated: {', '.join(duplicates)}")


def _as_model(model: Model | str) -> Model:
    return from_string(model) if isinstance(model, str) else model


@attrs.frozen
class AgentSpec:
    """What an agent is made of. ``model`` is a model object or a string
    such as ``"anthropic:claude-sonnet-4-5"`` (see ``models.from_string``)."""

    name: str
    model: Model = attrs.field(converter=_as_model)
    system_prompt: str = attrs.field(default="", kw_only=True)
    tools: tuple[Tool, ...] = attrs.field(
        default=(), converter=tuple, validator=_unique_tool_names, kw_only=True
    )
    middleware: tuple[Callable[..., Any], ...] = attrs.field(
        default=(), converter=tuple, kw_only=True
    )
    permission: Permission | None = attrs.field(default=None, kw_only=True)
    limits: Limits = attrs.field(factory=Limits, kw_only=True)
    hooks: Hooks | None = attrs.field(default=None, kw_only=True)


@attrs.frozen
class RunResult:
    stop_reason: RunStopReason
    new_messages: list[Message]
    usage: Usage
    turns: int
    error: str | None = None

    @property
    def text(self) -> str:
        """The text of the last assistant message of the run."""
        for message in reversed(self.new_messages):
            if message.role == "assistant":
                return message.text
        return ""
