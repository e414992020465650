"""OpenTelemetry traces of agent runs, in the GenAI semantic conventions.

Off until ``instrument()`` is called. The runtime calls the hooks below at
the points a span starts or ends; while tracing is off each one is a check
of one global that returns a shared no-op, and nothing is imported from
``opentelemetry``. ``instrument()`` imports ``agentrio.tracing._otel`` (which
needs only ``opentelemetry-api``, the ``agentrio[otel]`` extra) and routes
the hooks to it.

Spans live in the task that does the work and are made current there, so
that the trio tasks started from it (tool workers, the model stream, a child
agent's actor and, from it, the child's runs) inherit them through their
copied ``contextvars``: ``invoke_agent`` in a run's task, ``chat`` around a
model request, ``execute_tool`` in a tool worker. With ``turn_spans`` the
trace follows the state machine (QueryEngine): ``invoke_agent`` -> ``turn``
-> ``step`` -> ``chat`` / ``execute_tool``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from . import _otel

#: The live tracer while instrumented (an ``_otel.Tracing``), else None.
_active: _otel.Tracing | None = None


class _NoSpan:
    """What every hook returns while tracing is off: a context manager whose
    methods do nothing."""

    __slots__ = ()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def stopped(self, result: Any) -> None:
        pass

    def answered(self, assembler: Any, error: Any = None) -> None:
        pass

    def finished(self, outcome: Any) -> None:
        pass

    def ended(self, stop_reason: str) -> None:
        pass


NO_SPAN = _NoSpan()


def instrument(
    tracer_provider: Any = None,
    *,
    capture_content: bool = False,
    provider_traceparent: bool = False,
    turn_spans: bool = False,
) -> None:
    """Emit spans for every run, model request and tool call from now on.

    ``tracer_provider`` defaults to OpenTelemetry's global one. With
    ``capture_content`` the spans also carry messages, tool arguments and
    results (the conventions' opt-in content attributes); without it they
    carry none. With ``provider_traceparent`` model requests send the W3C
    ``traceparent`` header to the provider. With ``turn_spans`` each turn
    and each step is a span of its own (``turn {n}``, ``step {n}``), under
    which the requests and tool calls nest (and the run's events land). Calling it
    again replaces the previous settings. Needs ``pip install 'agentrio[otel]'``."""
    global _active
    try:
        from . import _otel
    except ImportError as exc:
        raise ImportError("tracing needs the OpenTelemetry API: pip install 'agentrio[otel]'") from exc
    _active = _otel.Tracing(
        tracer_provider,
        capture_content=capture_content,
        provider_traceparent=provider_traceparent,
        turn_spans=turn_spans,
    )


def uninstrument() -> None:
    """Stop emitting spans; spans already open still end normally."""
    global _active
    _active = None


def instrumented() -> bool:
    return _active is not None


# -- hooks the runtime calls ------------------------------------------------


def run_span(agent_name: str, agent_id: str, session_id: str) -> Any:
    """``invoke_agent {agent_name}`` for one run; ``stopped(result)`` records
    its ``RunResult``."""
    if _active is None:
        return NO_SPAN
    return _active.run_span(agent_name, agent_id, session_id)


def turn_span(turn: int, session_id: str) -> Any:
    """``turn {turn}`` for one turn of a run; ``ended(stop_reason)``
    records how it ended."""
    if _active is None or not _active.turn_spans:
        return NO_SPAN
    return _active.turn_span(turn, session_id)


def step_span(step: int, session_id: str) -> Any:
    """``step {step}``: one step of a turn (a model request, with its
    retries, and the tool calls it produced)."""
    if _active is None or not _active.turn_spans:
        return NO_SPAN
    return _active.step_span(step, session_id)


def chat_span(model: Any, request: Any, session_id: str) -> Any:
    """``chat {model}`` for one model request; ``answered(assembler, error)``
    records the response."""
    if _active is None:
        return NO_SPAN
    return _active.chat_span(model, request, session_id)


def tool_span(call: Any, session_id: str) -> Any:
    """``execute_tool {name}`` around one tool call's execution;
    ``finished(outcome)`` records its result (None: it was cancelled)."""
    if _active is None:
        return NO_SPAN
    return _active.tool_span(call, session_id)


def event(name: str, **attributes: Any) -> None:
    """Add an event to the current span (a run's, in its own task). The
    runtime's events: ``agentrio.retry`` (``attempt``, ``delay``,
    ``error.type``), ``agentrio.fallback`` (``from``, ``to``, ``error.type``),
    ``agentrio.discard`` (``reason``), ``agentrio.approval``
    (``gen_ai.tool.call.id``, ``decision``)."""
    if _active is not None:
        _active.event(name, attributes)


def provider_headers() -> dict[str, str]:
    """Trace-context headers for a provider HTTP request, when enabled."""
    if _active is None:
        return {}
    return _active.provider_headers()


def subprocess_env(env: Mapping[str, str] | None) -> Mapping[str, str] | None:
    """``env`` (None: this process's environment) with ``TRACEPARENT`` (and
    ``TRACESTATE``) of the current span added; ``env`` itself when off."""
    if _active is None:
        return env
    return _active.subprocess_env(env)


def request_meta() -> dict[str, str] | None:
    """Trace context for an MCP request's ``_meta``; None when off."""
    if _active is None:
        return None
    return _active.carrier() or None
