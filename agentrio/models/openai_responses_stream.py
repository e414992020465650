"""Reading an OpenAI Responses API stream.

Output items arrive in order (``output_index``); each becomes one block, or
one per text part for messages. A reasoning item becomes a ``Thinking``
block whose signature is the item's encrypted content, taken from
``output_item.done`` (the copy in ``output_item.added`` is not the final
one), and whose id is the item id: both are needed to replay it.
"""

from __future__ import annotations

from typing import Any

import attrs

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

_INCOMPLETE_REASONS: dict[str, StopReason] = {
    "max_output_tokens": "max_tokens",
    "content_filter": "error",
}


def responses_usage(usage: dict[str, Any]) -> Usage:
    """``input_tokens`` counts cached and cache-written tokens too;
    ``Usage.input_tokens`` does not."""
    details = usage.get("input_tokens_details") or {}
    cached = token_count(details.get("cached_tokens"))
    written = token_count(details.get("cache_write_tokens"))
    return Usage(
        input_tokens=max(0, token_count(usage.get("input_tokens")) - cached - written),
        output_tokens=token_count(usage.get("output_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


@attrs.define
class _Item:
    """An output item in progress."""

    kind: str
    index: int | None = None  # its block, for reasoning and function calls
    parts: dict[int, int] = attrs.field(factory=dict)  # message content_index -> text block
    streamed: bool = False  # text or arguments arrived as deltas
    summary_index: int = 0

    def block(self) -> int:
        """Its block; ``LookupError`` for an item that has none (a delta that
        does not fit the item's kind: an invalid response)."""
        if self.index is None:
            raise LookupError(f"a {self.kind!r} output item has no such block")
        return self.index


class ResponsesStreamMapper:
    def __init__(self, model: str, provider: str) -> None:
        self._model = model
        self._provider = provider
        self._blocks = Blocks()
        self._started = False
        self._items: dict[int, _Item] = {}
        self._has_calls = False
        self._stop: StopReason | None = None
        self._usage = Usage()

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]:
        payload = parse_json(sse)
        kind = payload.get("type") or sse.event
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            response = payload.get("response") or {}
            out.append(StreamStart(response.get("model") or self._model, self._provider))
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            self._text_delta(payload, out)
        elif kind == "response.function_call_arguments.delta":
            item = self._items[payload["output_index"]]
            item.streamed = True
            out.append(ToolCallDelta(item.block(), payload["delta"]))
        elif kind == "response.reasoning_summary_text.delta" or kind == "response.reasoning_text.delta":
            self._reasoning_delta(payload, out)
        elif kind == "response.output_item.added":
            self._item_added(payload["output_index"], payload["item"], out)
        elif kind == "response.output_item.done":
            self._item_done(payload["output_index"], payload["item"], out)
        elif kind == "response.completed" or kind == "response.incomplete":
            self._complete(payload["response"])
        elif kind == "response.failed":
            raise provider_error(payload["response"].get("error") or payload["response"])
        elif kind == "error":
            raise provider_error(payload)
        return out

    def _text_delta(self, payload: dict[str, Any], out: list[StreamEvent]) -> None:
        item = self._items[payload["output_index"]]
        part = payload.get("content_index", 0)
        index = item.parts.get(part)
        if index is None:
            index = item.parts[part] = self._blocks.start(TextEnd)
            out.append(TextStart(index))
        item.streamed = True
        out.append(TextDelta(index, payload["delta"]))

    def _reasoning_delta(self, payload: dict[str, Any], out: list[StreamEvent]) -> None:
        item = self._items[payload["output_index"]]
        text = payload["delta"]
        summary_index = payload.get("summary_index", 0)
        if summary_index != item.summary_index:
            item.summary_index = summary_index
            text = "\n\n" + text  # a new summary part
        item.streamed = True
        out.append(ThinkingDelta(item.block(), text=text))

    def _item_added(self, output_index: int, data: dict[str, Any], out: list[StreamEvent]) -> None:
        item = self._items[output_index] = _Item(data.get("type", ""))
        if item.kind == "reasoning":
            item.index = self._blocks.start(ThinkingEnd)
            out.append(ThinkingStart(item.index))
        elif item.kind == "function_call":
            self._has_calls = True
            item.index = self._blocks.start(ToolCallEnd)
            out.append(
                ToolCallStart(
                    item.index, data.get("call_id") or data.get("id") or new_id("call"), data.get("name", "")
                )
            )

    def _item_done(self, output_index: int, data: dict[str, Any], out: list[StreamEvent]) -> None:
        item = self._items.get(output_index)
        if item is None:  # a server that skipped output_item.added
            self._item_added(output_index, data, out)
            item = self._items[output_index]
        if item.kind == "message":
            if not item.streamed:
                self._whole_message(item, data, out)
            out += [self._blocks.end(index) for index in item.parts.values()]
        elif item.kind == "reasoning":
            if not item.streamed:
                summary = "\n\n".join(s.get("text", "") for s in data.get("summary") or ())
                if summary:
                    out.append(ThinkingDelta(item.block(), text=summary))
            if signature := data.get("encrypted_content"):
                out.append(ThinkingDelta(item.block(), signature=signature))
            out.append(self._blocks.end(item.block(), id=data.get("id")))
        elif item.kind == "function_call":
            if not item.streamed and data.get("arguments"):
                out.append(ToolCallDelta(item.block(), data["arguments"]))
            out.append(self._blocks.end(item.block()))

    def _whole_message(self, item: _Item, data: dict[str, Any], out: list[StreamEvent]) -> None:
        """A message whose text came only in ``output_item.done``."""
        for part, content in enumerate(data.get("content") or ()):
            text = content.get("text") or content.get("refusal")
            if text:
                index = item.parts[part] = self._blocks.start(TextEnd)
                out += [TextStart(index), TextDelta(index, text)]

    def _complete(self, response: dict[str, Any]) -> None:
        if usage := response.get("usage"):
            self._usage = responses_usage(usage)
        if response.get("status") == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason", "")
            self._stop = _INCOMPLETE_REASONS.get(reason, "max_tokens")
        else:
            self._stop = "tool_use" if self._has_calls else "stop"

    def finish(self) -> list[StreamEvent]:
        if self._stop is None:
            raise connection_error("the stream ended before response.completed")
        return [*self._blocks.end_all(), Done(self._stop, self._usage)]
