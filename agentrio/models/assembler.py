"""Folding a normalized stream back into an ``AssistantMessage``."""

from __future__ import annotations

import json

import attrs

from ..messages import AssistantMessage, Part, Text, Thinking, ToolCall, Usage
from .events import (
    Done,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallStart,
)


@attrs.define
class _Block:
    kind: type[Part]
    text: list[str] = attrs.field(factory=list)
    signature: list[str] = attrs.field(factory=list)
    redacted: bool = False
    id: str | None = None
    name: str = ""

    def part(self) -> Part:
        if self.kind is Text:
            return Text("".join(self.text))
        if self.kind is Thinking:
            return Thinking(
                "".join(self.text),
                signature="".join(self.signature) or None,
                redacted=self.redacted,
                id=self.id,
            )
        return parse_tool_call(self.id or "", self.name, "".join(self.text))


def parse_tool_call(call_id: str, name: str, arguments: str) -> ToolCall:
    """A ``ToolCall`` from streamed JSON arguments (empty means no arguments).
    Arguments that are not a JSON object a journal can hold (NaN, nesting
    too deep to parse or store) are kept raw, for the model to be told."""
    if not arguments.strip():
        return ToolCall(call_id, name, {})
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        parsed = None
    if type(parsed) is dict:
        try:
            # ToolCall checks its arguments itself: checking first would walk them twice.
            return ToolCall(call_id, name, parsed)
        except TypeError:
            pass  # NaN, or nesting too deep to store
    return ToolCall(call_id, name, {}, raw_arguments=arguments)


class MessageAssembler:
    """Accumulates stream events; ``message()`` gives the settled message."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self.model = ""
        self.provider = ""
        self.done: Done | None = None

    def feed(self, event: StreamEvent) -> None:
        match event:
            case TextDelta(index=i, text=t):
                self._blocks[i].text.append(t)
            case ToolCallDelta(index=i, arguments=a):
                self._blocks[i].text.append(a)
            case ThinkingDelta(index=i, text=t, signature=s):
                block = self._blocks[i]
                block.text.append(t)
                block.signature.append(s)
            case TextStart(index=i):
                self._blocks[i] = _Block(Text)
            case ThinkingStart(index=i, redacted=r):
                self._blocks[i] = _Block(Thinking, redacted=r)
            case ToolCallStart(index=i, id=call_id, name=name):
                self._blocks[i] = _Block(ToolCall, id=call_id, name=name)
            case ThinkingEnd(index=i, id=item_id):
                self._blocks[i].id = item_id
            case StreamStart(model=model, provider=provider):
                self.model, self.provider = model, provider
            case Done():
                self.done = event

    def message(self) -> AssistantMessage:
        """The complete message; the stream must have ended with ``Done``."""
        assert self.done is not None, "the stream has not finished"
        return AssistantMessage(
            content=[self._blocks[i].part() for i in sorted(self._blocks)],
            stop_reason=self.done.stop_reason,
            usage=self.done.usage,
            model=self.model,
            provider=self.provider,
        )

    def interrupted(self, stop_reason: str, error: str | None = None) -> AssistantMessage:
        """What a stream cut short leaves: its visible text, and never a
        partial tool call or an unsigned thought."""
        text = "".join(
            "".join(self._blocks[i].text)
            for i in sorted(self._blocks)
            if self._blocks[i].kind is Text
        )
        return AssistantMessage(
            content=[Text(text)] if text else [],
            stop_reason=stop_reason,
            usage=self.done.usage if self.done else Usage(),
            model=self.model,
            provider=self.provider,
            error=error,
        )
