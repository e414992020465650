"""What an agent is made of, and what a run gives back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs

from ..messages import Message, ToolCall, ToolResultMessage, Usage
from ..models import (
    FallbackModel,
    Model,
    ModelRequest,
    OutputSpec,
    Prices,
    ProviderError,
    ToolSpec,
    from_string,
)
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
    "compaction_failed",
    "blocked",
    "error",
    "output_invalid",
    "budget",
]

Decision = Literal["allow", "deny", "ask"]
#: A policy answers a verdict (``Decision``, or ``deny_and_stop``) as a str or
#: a ``tools.permissions.Decision`` carrying a reason (see ``tools.decide``).
Permission = Callable[[ToolCall, Tool], "str | Awaitable[str]"]


def _describe(value: Any) -> str:
    if callable(value) and hasattr(value, "__name__"):
        return f"{type(value).__name__} {value.__name__!r}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field(instance: Any, attribute: attrs.Attribute[Any]) -> str:
    return f"{type(instance).__name__}.{attribute.name}"


def _positive_int(optional: bool) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    expected = "a positive int or None" if optional else "a positive int"

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{_field(instance, attribute)}: expected {expected}, got {_describe(value)}")
        if value <= 0:
            raise ValueError(f"{_field(instance, attribute)}: expected {expected}, got {value!r}")

    return check


def _positive_seconds(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{_field(instance, attribute)}: expected seconds (a positive number) or None, got {_describe(value)}"
        )
    if not value > 0:
        raise ValueError(
            f"{_field(instance, attribute)}: expected seconds (a positive number) or None, got {value!r}"
        )


def _positive_dollars(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{_field(instance, attribute)}: expected US dollars (a positive number) or None, got {_describe(value)}"
        )
    if not 0 < value < float("inf"):
        raise ValueError(
            f"{_field(instance, attribute)}: expected US dollars (a positive number) or None, got {value!r}"
        )


def _fraction(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{_field(instance, attribute)}: expected a fraction above 0 and at most 1, got {_describe(value)}"
        )
    if not 0 < value <= 1:
        raise ValueError(
            f"{_field(instance, attribute)}: expected a fraction above 0 and at most 1, got {value!r}"
        )


def _count(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{_field(instance, attribute)}: expected an int of 0 or more, got {_describe(value)}"
        )
    if value < 0:
        raise ValueError(f"{_field(instance, attribute)}: expected an int of 0 or more, got {value!r}")


def _optional_callable(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{_field(instance, attribute)}: expected a function or None, got {_describe(value)}")


def _chain(value: Any) -> Any:
    """A list of listeners is kept as a tuple (a chain); see ``hook_chain``."""
    return tuple(value) if isinstance(value, list | tuple) else value


def _hook(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    for index, listener in enumerate(value if isinstance(value, tuple) else (value,)):
        if listener is not None and not callable(listener):
            where = (
                f"{_field(instance, attribute)}[{index}]"
                if isinstance(value, tuple)
                else _field(instance, attribute)
            )
            raise TypeError(
                f"{where}: expected a function, a list of functions or None, got {_describe(listener)}"
            )


#: Several listeners of one hook (see ``hook_chain``).
_Chain = Sequence[Callable[..., Any]]


def _hook_field() -> Any:
    return attrs.field(default=None, converter=_chain, validator=_hook)


TOOL_EXECUTIONS = ("parallel", "sequential")


@attrs.frozen
class Limits:
    """Per run: ``max_turns`` model requests (retries excluded),
    ``max_tool_calls`` executed tool calls, ``timeout`` seconds.

    Context: history is compacted (see ``agentrio.actors.compaction``) when a
    request would pass ``compact_at`` of ``context_window`` tokens (the
    model's own ``context_window`` attribute when None; no threshold when
    neither is known), keeping about ``keep_recent_tokens`` of the most
    recent history; a context overflow from the provider compacts and
    retries once whatever the window. A text reply cut by the output limit
    is continued with up to ``continue_on_max_tokens`` more requests, whose
    output budget doubles each time up to ``max_output_tokens`` (when set).

    Every field is checked when the limits are made: a wrong type or a value
    that is not positive raises ``TypeError``/``ValueError`` naming it.
    """

    max_turns: int | None = attrs.field(default=None, validator=_positive_int(optional=True))
    max_tool_calls: int | None = attrs.field(default=None, validator=_positive_int(optional=True))
    timeout: float | None = attrs.field(default=None, validator=_positive_seconds)
    max_parallel_tool_calls: int = attrs.field(default=8, validator=_positive_int(optional=False))
    #: ``"sequential"``: every call runs alone, after the results of the
    #: calls before it are committed, as an exclusive tool does.
    tool_execution: Literal["parallel", "sequential"] = attrs.field(default="parallel")
    context_window: int | None = attrs.field(default=None, validator=_positive_int(optional=True))
    compact_at: float = attrs.field(default=0.8, validator=_fraction)
    keep_recent_tokens: int = attrs.field(default=20_000, validator=_positive_int(optional=False))
    continue_on_max_tokens: int = attrs.field(default=0, validator=_count)
    max_output_tokens: int | None = attrs.field(default=None, validator=_positive_int(optional=True))
    #: With ``AgentSpec.output_type``: how many times an answer that is not a
    #: valid output goes back to the model with the error before the run
    #: stops ``output_invalid``.
    output_retries: int = attrs.field(default=2, validator=_count)
    #: US dollars the run may spend: it stops ``budget`` before a request
    #: whose estimated input cost would take it past (and at once when the
    #: model has no known price, so no cost could be kept to).
    max_cost: float | None = attrs.field(default=None, validator=_positive_dollars)

    @tool_execution.validator
    def _check_tool_execution(self, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in TOOL_EXECUTIONS:
            raise ValueError(f"Limits.tool_execution: expected one of {TOOL_EXECUTIONS}, got {value!r}")

    def __attrs_post_init__(self) -> None:
        if (
            self.context_window is not None
            and self.keep_recent_tokens >= self.compact_at * self.context_window
        ):
            raise ValueError(
                f"Limits.keep_recent_tokens ({self.keep_recent_tokens}) must be below compact_at × "
                f"context_window ({self.compact_at} × {self.context_window}), or every request would compact"
            )


#: The limits of a spec that sets none (frozen, so every such spec shares them).
DEFAULT_LIMITS = Limits()


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
class PostTool:
    """A tool call's result, before it is made durable (journaled,
    committed, shown); ``post_tool`` may return a replacement."""

    agent: Agent
    call: ToolCall
    result: ToolResultMessage


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


@attrs.frozen
class Route:
    """A model request about to be sent, for ``choose_model``: ``purpose``
    is ``step`` (the run's own request) or ``summary`` (a compaction's);
    ``attempt`` counts from 1, and ``error`` is what the previous attempt
    failed with."""

    agent: Agent
    request: ModelRequest
    purpose: Literal["step", "summary"]
    attempt: int = 1
    error: ProviderError | None = None


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
    - ``post_tool(p: PostTool) -> ToolResultMessage | None``: sees each tool
      result before it is journaled or committed and may return a
      replacement (to redact or rewrite it); the journal never holds what it
      removed. A hook that fails turns the result into a ``TOOL_FAILED`` error.
    - ``on_protocol_violation(message: AssistantMessage) -> str |
      RequestContext | None``: the model wrote tool calls as text in
      ``message`` (discarded, and retried once): what to tell it (None: the
      default repair text), or the context to build the repair request from
      instead of the step's (with the default text).
    - ``choose_model(route: Route) -> Model | None``: the model for one
      request (a cheaper one for summaries, a fallback after errors); None
      keeps the spec's.

    Each field may also hold a list of callables, a chain (see
    ``hook_chain``): ``prepare_context``, ``pre_step``, ``on_request_error``
    and ``post_tool`` are a waterfall, each listener getting what the one
    before it left (a ``Reject`` from ``pre_step`` ends it; the request
    error's ``default_delay`` is the previous answer); the others run
    serially until one answers something other than None.
    """

    prepare_context: Callable[[RequestContext], MaybeAwaitable] | _Chain | None = _hook_field()
    pre_step: Callable[[PreStep], MaybeAwaitable] | _Chain | None = _hook_field()
    on_request_error: Callable[[RequestError], MaybeAwaitable] | _Chain | None = _hook_field()
    turn_stopping: Callable[[Agent], MaybeAwaitable] | _Chain | None = _hook_field()
    on_assistant_stream: Callable[[Any], MaybeAwaitable] | _Chain | None = _hook_field()
    post_tool: Callable[[PostTool], MaybeAwaitable] | _Chain | None = _hook_field()
    choose_model: Callable[[Route], MaybeAwaitable] | _Chain | None = _hook_field()
    on_protocol_violation: Callable[[Any], MaybeAwaitable] | _Chain | None = _hook_field()


def _tools(instance: Any, attribute: attrs.Attribute[Any], tools: Sequence[Tool]) -> None:
    for index, item in enumerate(tools):
        if not isinstance(item, Tool):
            hint = " — decorate the function with @tool" if callable(item) else ""
            raise TypeError(f"AgentSpec.tools[{index}]: expected a Tool{hint} — got {_describe(item)}")
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"tool names must be unique; repeated: {', '.join(duplicates)}")


def _as_model(model: Model | str | Sequence[Model | str]) -> Model:
    if isinstance(model, str):
        return from_string(model)
    if isinstance(model, list | tuple):
        # Models in order of preference: the next takes a request the one before failed.
        if not model:
            raise ValueError("AgentSpec.model: an empty list names no model")
        return FallbackModel(*(_as_model(m) for m in model))
    if not callable(getattr(model, "stream", None)):
        raise TypeError(
            "AgentSpec.model: expected a model (an object with an async stream(request) method, "
            f"such as OpenAIChat or ScriptedModel) or a string such as 'openai:gpt-4.1', got {_describe(model)}"
        )
    return cast(Model, model)  # (it streams: a model by its shape)


def _as_prices(value: Any) -> Prices | None:
    if value is None or isinstance(value, Prices):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(
            f"AgentSpec.prices: expected Prices or a dict of model string -> Price, got {_describe(value)}"
        )
    return Prices(value)


def _middleware(instance: Any, attribute: attrs.Attribute[Any], layers: Sequence[Any]) -> None:
    for index, layer in enumerate(layers):
        if not callable(layer):
            raise TypeError(
                f"AgentSpec.middleware[{index}]: expected an async function (ctx, call_next), got {_describe(layer)}"
            )


def _instance_of(
    cls: type, fix: str, optional: bool = False
) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if (value is None and optional) or isinstance(value, cls):
            return
        raise TypeError(f"{_field(instance, attribute)}: expected {fix}, got {_describe(value)}")

    return check


def _sequence(field: str) -> Callable[[Any], tuple[Any, ...]]:
    def convert(value: Any) -> tuple[Any, ...]:
        if isinstance(value, str | bytes | dict) or not hasattr(value, "__iter__"):
            raise TypeError(f"{field}: expected a list or tuple, got {_describe(value)}")
        return tuple(value)

    return convert


def _restart_intensity(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    ok = (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], int)
        and not isinstance(value[0], bool)
        and value[0] >= 0
        and isinstance(value[1], int | float)
        and value[1] > 0
    )
    if not ok:
        raise ValueError(
            f"AgentSpec.restart_intensity: expected (max_restarts, within_seconds) such as (3, 60.0), got {value!r}"
        )


RESTARTS = ("never", "on_crash")
#: What a turn that fails (stops aborted, on a time-out or an error) leaves
#: in history: ``keep`` its messages (repaired: every call answered), or
#: ``rollback`` to history as it was before the turn.
ON_FAILURE = ("keep", "rollback")
COMPACTIONS = ("blocking", "background")


_tools_of = _sequence("AgentSpec.tools")
_middleware_of = _sequence("AgentSpec.middleware")


def _as_tools(value: Any) -> tuple[Any, ...]:
    return _tools_of(value)


def _as_middleware(value: Any) -> tuple[Any, ...]:
    return _middleware_of(value)


@attrs.frozen
class AgentSpec:
    """What an agent is made of. ``model`` is a model object, a string
    such as ``"anthropic:claude-sonnet-4-5"`` (see ``models.from_string``),
    or a list of them: a ``FallbackModel`` in that order.

    Every field is checked when the spec is made: a mistake raises
    ``TypeError``/``ValueError`` naming the field, what it expects and how
    to fix it, never an ``AttributeError`` later inside a run.
    """

    name: str = attrs.field(validator=_instance_of(str, "a str, the agent's name"))
    model: Model = attrs.field(converter=_as_model)
    system_prompt: str = attrs.field(default="", kw_only=True, validator=_instance_of(str, "a str"))
    #: What the summary request of a compaction asks for (None: the default
    #: prompt, which keeps goals, decisions, files touched and open work).
    compaction_prompt: str | None = attrs.field(
        default=None, kw_only=True, validator=_instance_of(str, "a str or None", optional=True)
    )
    tools: tuple[Tool, ...] = attrs.field(default=(), converter=_as_tools, validator=_tools, kw_only=True)
    middleware: tuple[Callable[..., Any], ...] = attrs.field(
        default=(), converter=_as_middleware, validator=_middleware, kw_only=True
    )
    permission: Permission | None = attrs.field(default=None, kw_only=True, validator=_optional_callable)
    limits: Limits = attrs.field(
        default=DEFAULT_LIMITS,
        kw_only=True,
        validator=_instance_of(Limits, "a Limits — write Limits(max_turns=...)"),
    )
    hooks: Hooks | None = attrs.field(
        default=None,
        kw_only=True,
        validator=_instance_of(Hooks, "a Hooks or None — write Hooks(...)", optional=True),
    )
    #: ``"never"``: a failed agent stays failed. ``"on_crash"``: an agent whose
    #: run fails (stop reason ``error``) is restored from its journal and
    #: carries on with its pending input, at most ``restart_intensity``
    #: ``(max_restarts, within_seconds)`` times; past that it stops for good.
    restart: Literal["never", "on_crash"] = attrs.field(default="never", kw_only=True)
    restart_intensity: tuple[int, float] = attrs.field(
        default=(3, 60.0), kw_only=True, converter=tuple, validator=_restart_intensity
    )
    #: What a failed turn leaves in history (see ``ON_FAILURE``); ``keep``
    #: by default. ``run(prompt, on_failure=...)`` chooses per prompt. A
    #: rollback takes the turn's messages (its prompt included) out of
    #: history, never out of the journal: a fork at that turn has them.
    on_failure: Literal["keep", "rollback"] = attrs.field(default="keep", kw_only=True)
    #: ``blocking``: past ``Limits.compact_at`` the step waits for the
    #: summary. ``background``: the summary is requested beside the run and
    #: applied at the next step boundary once ready (blocking again if it
    #: failed). An overflow always compacts blocking.
    compaction: Literal["blocking", "background"] = attrs.field(default="blocking", kw_only=True)
    #: A type every run must end with a value of (see ``models.OutputSpec``):
    #: the answer is parsed and converted into ``RunResult.output``. An
    #: ``OutputSpec`` is taken as it is (``OutputSpec.for_schema(schema)``:
    #: JSON data that fits a JSON Schema).
    output_type: Any = attrs.field(default=None, kw_only=True)
    #: ``OutputSpec.for_type(output_type)``, made (and checked) once; a
    #: model that says it cannot ask for it (``output_problem``) is refused
    #: here with ``ValueError``, not with a provider error in a run.
    output_spec: OutputSpec | None = attrs.field(init=False, eq=False, repr=False)
    #: Ask providers to cache each request's prefix (Anthropic
    #: ``cache_control`` breakpoints; OpenAI ``prompt_cache_key`` = the
    #: session id). False: no request asks.
    prompt_cache: bool = attrs.field(
        default=True, kw_only=True, validator=_instance_of(bool, "True or False")
    )
    #: Prices (``{"openai:gpt-4.1": Price(...)}``) laid over the Runtime's
    #: and the built-in table, for ``Usage.cost``.
    prices: Prices | None = attrs.field(default=None, kw_only=True, converter=_as_prices)

    @output_spec.default
    def _make_output_spec(self) -> OutputSpec | None:
        if self.output_type is None:
            return None
        if isinstance(self.output_type, OutputSpec):
            spec = self.output_type
        else:
            spec = OutputSpec.for_type(self.output_type)
        # Optional on a model: the HTTP adapters know what their provider refuses.
        check = getattr(self.model, "output_problem", None)
        if check is not None and (problem := check(spec)):
            raise ValueError(f"AgentSpec.output_type: {problem}")
        return spec

    @compaction.validator
    def _check_compaction(self, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in COMPACTIONS:
            raise ValueError(f"AgentSpec.compaction: expected one of {COMPACTIONS}, got {value!r}")

    @on_failure.validator
    def _check_on_failure(self, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in ON_FAILURE:
            raise ValueError(f"AgentSpec.on_failure: expected one of {ON_FAILURE}, got {value!r}")

    @restart.validator
    def _check_restart(self, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in RESTARTS:
            raise ValueError(f"AgentSpec.restart: expected one of {RESTARTS}, got {value!r}")


@attrs.frozen
class RunResult:
    """How a run ended. ``run(prompt)`` gives the result of the turn that
    answered that prompt: its own ``new_messages``, ``usage`` and ``steps``
    (model requests; what ``Limits.max_turns`` counts), ``turns`` (1, or
    more for a whole activity). ``joined`` is true when the prompt was
    taken into a turn another input started (steering). ``error`` is set
    whenever the stop reason is an error (``error``, ``model_error``,
    ``tool_error``); ``cancel_cause`` whenever it is ``aborted``.
    """

    stop_reason: RunStopReason
    new_messages: list[Message]
    usage: Usage
    turns: int
    error: str | None = None
    steps: int = attrs.field(default=0, kw_only=True)
    joined: bool = attrs.field(default=False, kw_only=True)
    #: The turn failed and its messages were rolled back out of history
    #: (``on_failure="rollback"``); ``new_messages`` still lists them.
    rolled_back: bool = attrs.field(default=False, kw_only=True)
    cancel_cause: str | None = attrs.field(default=None, kw_only=True)
    #: The converted value, with ``AgentSpec.output_type`` (``text`` stays the raw answer).
    output: Any = attrs.field(default=None, kw_only=True)

    @property
    def cost(self) -> float | None:
        """What the run cost in US dollars (``usage.cost``; None when a
        model it used has no known price)."""
        return self.usage.cost

    @property
    def text(self) -> str:
        """The text of the last assistant message of the run."""
        for message in reversed(self.new_messages):
            if message.role == "assistant":
                return message.text
        return ""
