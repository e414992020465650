"""The spans themselves: imported only by ``instrument()``.

Attribute names follow the OpenTelemetry GenAI semantic conventions
(``gen_ai.*``); what they do not name is under ``agentrio.*``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Self

import trio
from opentelemetry import context, propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from . import content

#: Providers as the conventions name them (``gen_ai.provider.name``).
PROVIDER_NAMES = {"openai-responses": "openai"}


def _cancelled(exc: BaseException) -> bool:
    """A cancel, also when a nursery gathered it (with its tasks' own) into a group."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1] is None
    return isinstance(exc, trio.Cancelled)


class _Current:
    """A span made current in this task for the length of a ``with`` block,
    ended on exit. Leaving the block by an exception (a cancel included) marks
    it failed, unless an outcome was recorded already."""

    __slots__ = ("_capture", "_outcome", "_span", "_token")

    def __init__(self, span: Span, capture: bool) -> None:
        self._span = span
        self._capture = capture
        self._outcome = False
        self._token: Any = None

    def __enter__(self) -> Self:
        self._token = context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        try:
            if exc is not None and not self._outcome:
                if _cancelled(exc):
                    self._fail("cancelled", "cancelled")
                else:
                    self._fail(type(exc).__qualname__, f"{type(exc).__name__}: {exc}")
        finally:
            context.detach(self._token)
            self._span.end()

    def _fail(self, error_type: str, description: str) -> None:
        self._outcome = True
        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, description))

    def _usage(self, usage: Any) -> None:
        span = self._span
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        if usage.cache_read_tokens:
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
        if usage.cache_write_tokens:
            span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)


class RunSpan(_Current):
    """``invoke_agent``: one run of an agent."""

    __slots__ = ()

    def stopped(self, result: Any) -> None:
        """Record a ``RunResult``: anything but ``completed`` is an error
        status whose description is the stop reason."""
        self._outcome = True
        self._span.set_attribute("agentrio.stop_reason", result.stop_reason)
        self._span.set_attribute("agentrio.turns", result.turns)
        self._usage(result.usage)
        if result.stop_reason != "completed":
            why = f": {result.error}" if result.error else ""
            self._fail(result.stop_reason, result.stop_reason + why)


class TurnSpan(_Current):
    """``turn``: one turn of a run; ``step`` spans use the base class."""

    __slots__ = ()

    def ended(self, stop_reason: str) -> None:
        self._outcome = True
        self._span.set_attribute("agentrio.stop_reason", stop_reason)
        if stop_reason != "completed":
            self._fail(stop_reason, stop_reason)


class ChatSpan(_Current):
    """``chat``: one model request."""

    __slots__ = ()

    def answered(self, assembler: Any, error: Any = None) -> None:
        """Record what a request's stream assembled, and the provider error
        it ended with, if any."""
        self._outcome = True
        span = self._span
        if assembler.model:
            span.set_attribute("gen_ai.response.model", assembler.model)
        done = assembler.done
        if done is not None:
            span.set_attribute("gen_ai.response.finish_reasons", [done.stop_reason])
            self._usage(done.usage)
            if self._capture and error is None:
                span.set_attribute("gen_ai.output.messages", content.messages([assembler.message()]))
        if error is not None:
            self._fail(str(error.type), str(error))


class ToolSpan(_Current):
    """``execute_tool``: one tool call's execution."""

    __slots__ = ()

    def finished(self, outcome: Any) -> None:
        """Record a ``ToolResult``; None means the call was cancelled."""
        self._outcome = True
        if outcome is None:
            self._fail("cancelled", "cancelled")
            return
        output = content.tool_output(outcome.content) if self._capture else None
        if output is not None:
            self._span.set_attribute("gen_ai.tool.call.result", output)
        if outcome.is_error:
            # The error's text is the tool's output: content, like the rest.
            self._fail("tool_error", output[:200] if output is not None else "tool_error")


class Tracing:
    """The hooks' implementation while instrumented (see ``agentrio.tracing``)."""

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        capture_content: bool,
        provider_traceparent: bool,
        turn_spans: bool = False,
    ) -> None:
        self.tracer = trace.get_tracer("agentrio", tracer_provider=tracer_provider)
        self.capture_content = capture_content
        self.provider_traceparent = provider_traceparent
        self.turn_spans = turn_spans

    def run_span(self, agent_name: str, agent_id: str, session_id: str) -> RunSpan:
        span = self.tracer.start_span(
            f"invoke_agent {agent_name}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent_name,
                "gen_ai.agent.id": agent_id,
                "gen_ai.conversation.id": session_id,
            },
        )
        return RunSpan(span, self.capture_content)

    def turn_span(self, turn: int, session_id: str) -> TurnSpan:
        attributes: dict[str, AttributeValue] = {"agentrio.turn": turn, "gen_ai.conversation.id": session_id}
        return TurnSpan(self.tracer.start_span(f"turn {turn}", attributes=attributes), self.capture_content)

    def step_span(self, step: int, session_id: str) -> _Current:
        attributes: dict[str, AttributeValue] = {"agentrio.step": step, "gen_ai.conversation.id": session_id}
        return _Current(self.tracer.start_span(f"step {step}", attributes=attributes), self.capture_content)

    def chat_span(self, model: Any, request: Any, session_id: str) -> ChatSpan:
        name = str(getattr(model, "model", "") or "")
        provider = str(getattr(model, "provider", "") or type(model).__name__)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": PROVIDER_NAMES.get(provider, provider),
            "gen_ai.request.model": name,
            "gen_ai.conversation.id": session_id,
        }
        for option in ("max_tokens", "temperature"):
            value = getattr(model, option, None)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attributes[f"gen_ai.request.{option}"] = value
        if self.capture_content:
            if request.system_prompt:
                attributes["gen_ai.system_instructions"] = content.system_instructions(request.system_prompt)
            attributes["gen_ai.input.messages"] = content.messages(request.messages)
        span = self.tracer.start_span(f"chat {name}".rstrip(), kind=SpanKind.CLIENT, attributes=attributes)
        return ChatSpan(span, self.capture_content)

    def tool_span(self, call: Any, session_id: str) -> ToolSpan:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": session_id,
        }
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = content.dumps(call.arguments)
        span = self.tracer.start_span(
            f"execute_tool {call.name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        return ToolSpan(span, self.capture_content)

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        values = {
            k: v if isinstance(v, (str, bool, int, float)) else str(v)
            for k, v in attributes.items()
            if v is not None
        }
        trace.get_current_span().add_event(name, values)

    def carrier(self) -> dict[str, str]:
        """The current trace context in the global propagator's format."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        return carrier

    def provider_headers(self) -> dict[str, str]:
        return self.carrier() if self.provider_traceparent else {}

    def subprocess_env(self, env: Mapping[str, str] | None) -> Mapping[str, str] | None:
        carrier = self.carrier()
        if not carrier:
            return env
        # Environment-variable carriers use upper-case names (TRACEPARENT).
        return {**(os.environ if env is None else env), **{k.upper(): v for k, v in carrier.items()}}
