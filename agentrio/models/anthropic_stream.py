"""Reading an Anthropic Messages stream.

Thinking keeps its signature (``signature_delta``); a redacted thinking
block carries its opaque data as the signature. Server-side tool blocks
(``server_tool_use`` and their results) are run by Anthropic itself and are
not part of the normalized stream.
"""

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
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "context_overflow",
    "refusal": "error",
}

_USAGE_FIELDS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
}


class AnthropicStreamMapper:
    def __init__(self, model: str, provider: str) -> None:
        self._model = model
        self._provider = provider
        self._blocks = Blocks()
        self._indexes: dict[int, int] = {}  # Anthropic's block index -> ours
        self._usage: dict[str, int] = {}
        self._stop: StopReason | None = None
        self._finished = False

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]:
        payload = parse_json(sse)
        kind = payload.get("type") or sse.event
        if kind == "content_block_delta":
            return self._delta(payload)
        if kind == "content_block_start":
            return self._start(payload["index"], payload["content_block"])
        if kind == "content_block_stop":
            index = self._indexes.pop(payload["index"], None)
            return [] if index is None else [self._blocks.end(index)]
        if kind == "message_start":
            message = payload.get("message") or {}
            self._add_usage(message.get("usage"))
            return [StreamStart(message.get("model") or self._model, self._provider)]
        if kind == "message_delta":
            self._add_usage(payload.get("usage"))
            reason = (payload.get("delta") or {}).get("stop_reason")
            if reason:
                self._stop = _STOP_REASONS.get(reason, "stop")
        elif kind == "message_stop":
            self._finished = True
        elif kind == "error":
            raise provider_error(payload)
        return []

    def _delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = self._indexes.get(payload["index"])
        if index is None:
            return []  # a block we do not keep
        delta = payload["delta"]
        kind = delta.get("type")
        if kind == "text_delta":
            return [TextDelta(index, delta["text"])]
        if kind == "input_json_delta":
            return [ToolCallDelta(index, delta["partial_json"])] if delta["partial_json"] else []
        if kind == "thinking_delta":
            return [ThinkingDelta(index, text=delta["thinking"])] if delta["thinking"] else []
        if kind == "signature_delta":
            return [ThinkingDelta(index, signature=delta["signature"])]
        return []

    def _start(self, anthropic_index: int, block: dict[str, Any]) -> list[StreamEvent]:
        kind = block.get("type")
        if kind == "text":
            index = self._indexes[anthropic_index] = self._blocks.start(TextEnd)
            out: list[StreamEvent] = [TextStart(index)]
            if block.get("text"):
                out.append(TextDelta(index, block["text"]))
            return out
        if kind == "tool_use":
            index = self._indexes[anthropic_index] = self._blocks.start(ToolCallEnd)
            return [ToolCallStart(index, block.get("id") or new_id("toolu"), block["name"])]
        if kind == "thinking":
            index = self._indexes[anthropic_index] = self._blocks.start(ThinkingEnd)
            out = [ThinkingStart(index)]
            if block.get("thinking") or block.get("signature"):
                out.append(ThinkingDelta(index, block.get("thinking", ""), block.get("signature", "")))
            return out
        if kind == "redacted_thinking":
            index = self._indexes[anthropic_index] = self._blocks.start(ThinkingEnd)
            return [ThinkingStart(index, redacted=True), ThinkingDelta(index, signature=block["data"])]
        return []

    def _add_usage(self, usage: dict[str, Any] | None) -> None:
        # message_delta repeats the counts of message_start, updated.
        for name, value in (usage or {}).items():
            if name in _USAGE_FIELDS and value is not None:
                self._usage[_USAGE_FIELDS[name]] = token_count(value)

    def finish(self) -> list[StreamEvent]:
        if not self._finished:
            raise connection_error("the stream ended before message_stop")
        return [*self._blocks.end_all(), Done(self._stop or "stop", Usage(**self._usage))]
