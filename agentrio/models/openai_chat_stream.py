"""Reading an OpenAI Chat Completions stream (and its compatible servers')."""

from __future__ import annotations

from typing import Any

from .._ids import new_id
from ..messages import StopReason, Usage
from .blocks import Blocks
from .events import (
    Done,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from .provider_errors import connection_error, provider_error
from .sse import ServerSentEvent
from .sse_model import parse_json, token_count

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "error",
}


def chat_usage(usage: dict[str, Any]) -> Usage:
    """``prompt_tokens`` counts cached tokens too; ``Usage.input_tokens`` does not."""
    details = usage.get("prompt_tokens_details") or {}
    cached = token_count(details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens"))
    return Usage(
        input_tokens=max(0, token_count(usage.get("prompt_tokens")) - cached),
        output_tokens=token_count(usage.get("completion_tokens")),
        cache_read_tokens=cached,
    )


class ChatStreamMapper:
    def __init__(self, model: str, provider: str) -> None:
        self._model = model
        self._provider = provider
        self._blocks = Blocks()
        self._started = False
        self._text: int | None = None  # index of the open text block
        self._thinking: int | None = None  # index of the open thinking block
        self._calls: dict[int, int] = {}  # the provider's tool-call index -> block index
        self._finish_reason: str | None = None
        self._usage = Usage()
        self._done = False

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]:
        if sse.data == "[DONE]":
            self._done = True
            return []
        chunk = parse_json(sse)
        if sse.event == "error" or chunk.get("error"):
            raise provider_error(chunk)
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            out.append(StreamStart(chunk.get("model") or self._model, self._provider))
        if usage := chunk.get("usage"):
            self._usage = chat_usage(usage)
        for choice in chunk.get("choices") or ():
            if delta := choice.get("delta"):
                self._delta(delta, out)
            if reason := choice.get("finish_reason"):
                self._finish_reason = reason
        return out

    def _delta(self, delta: dict[str, Any], out: list[StreamEvent]) -> None:
        # Compatible servers name reasoning differently (vLLM, DeepSeek:
        # reasoning_content; OpenRouter, Groq, Ollama: reasoning).
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and isinstance(reasoning, str):
            if self._thinking is None:
                self._close_text(out)
                self._thinking = self._blocks.start(ThinkingEnd)
                out.append(ThinkingStart(self._thinking))
            out.append(ThinkingDelta(self._thinking, text=reasoning))
        if content := delta.get("content"):
            if self._text is None:
                self._close_thinking(out)
                self._text = self._blocks.start(TextEnd)
                out.append(TextStart(self._text))
            out.append(TextDelta(self._text, content))
        for call in delta.get("tool_calls") or ():
            self._tool_call(call, out)

    def _tool_call(self, call: dict[str, Any], out: list[StreamEvent]) -> None:
        function = call.get("function") or {}
        key = call.get("index")
        if key is None:  # some servers omit the index: a new id starts a new call
            key = len(self._calls) if call.get("id") or not self._calls else max(self._calls)
        index = self._calls.get(key)
        if index is None:
            self._close_text(out)
            self._close_thinking(out)
            index = self._calls[key] = self._blocks.start(ToolCallEnd)
            # A server that omits ids gets random ones: an id must stay unique
            # across the steps of a session, not only within one stream.
            call_id = call.get("id") or new_id("call")
            out.append(ToolCallStart(index, call_id, function.get("name") or ""))
        # A repeated header (same index, id and name again) only adds arguments.
        if arguments := function.get("arguments"):
            out.append(ToolCallDelta(index, arguments))

    def _close_text(self, out: list[StreamEvent]) -> None:
        if self._text is not None:
            out.append(self._blocks.end(self._text))
            self._text = None

    def _close_thinking(self, out: list[StreamEvent]) -> None:
        if self._thinking is not None:
            out.append(self._blocks.end(self._thinking))
            self._thinking = None

    def finish(self) -> list[StreamEvent]:
        if not self._done and self._finish_reason is None:
            raise connection_error("the stream ended before its finish_reason or [DONE]")
        stop = _STOP_REASONS.get(self._finish_reason or "stop", "stop")
        if stop == "stop" and self._calls:
            stop = "tool_use"  # some servers say "stop" (or nothing) after tool calls
        out: list[StreamEvent] = [] if self._started else [StreamStart(self._model, self._provider)]
        out += self._blocks.end_all()
        out.append(Done(stop, self._usage))
        return out
