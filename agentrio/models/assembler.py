"""Folding a normalized stream back into an ``AssistantMessage``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from .._json import loads
from ..messages import AssistantMessage, Part, StopReason, Text, Thinking, ToolCall, Usage
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
        parsed = loads(arguments)
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
        fold = _FOLDS.get(type(event))
        if fold is not None:
            fold(self, event)

    def _append_text(self, event: TextDelta) -> None:
        self._blocks[event.index].text.append(event.text)

    def _append_arguments(self, event: ToolCallDelta) -> None:
        self._blocks[event.index].text.append(event.arguments)

    def _append_thinking(self, event: ThinkingDelta) -> None:
        block = self._blocks[event.index]
        block.text.append(event.text)
        block.signature.append(event.signature)

    def _start_text(self, event: TextStart) -> None:
        self._blocks[event.index] = _Block(Text)

    def _start_thinking(self, event: ThinkingStart) -> None:
        self._blocks[event.index] = _Block(Thinking, redacted=event.redacted)

    def _start_tool_call(self, event: ToolCallStart) -> None:
        self._blocks[event.index] = _Block(ToolCall, id=event.id, name=event.name)

    def _end_thinking(self, event: ThinkingEnd) -> None:
        self._blocks[event.index].id = event.id

    def _start(self, event: StreamStart) -> None:
        self.model, self.provider = event.model, event.provider

    def _done(self, event: Done) -> None:
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

    def interrupted(self, stop_reason: StopReason, error: str | None = None) -> AssistantMessage:
        """What a stream cut short leaves: its visible text, and never a
        partial tool call or an unsigned thought."""
        text = "".join(
            "".join(self._blocks[i].text) for i in sorted(self._blocks) if self._blocks[i].kind is Text
        )
        return AssistantMessage(
            content=[Text(text)] if text else [],
            stop_reason=stop_reason,
            usage=self.done.usage if self.done else Usage(),
            model=self.model,
            provider=self.provider,
            error=error,
        )


#: What each kind of event does to the message; the others (a block's end)
#: change nothing. By exact type: stream events are final classes.
_FOLDS: dict[type, Callable[[MessageAssembler, Any], None]] = {
    TextDelta: MessageAssembler._append_text,
    ToolCallDelta: MessageAssembler._append_arguments,
    ThinkingDelta: MessageAssembler._append_thinking,
    TextStart: MessageAssembler._start_text,
    ThinkingStart: MessageAssembler._start_thinking,
    ToolCallStart: MessageAssembler._start_tool_call,
    ThinkingEnd: MessageAssembler._end_thinking,
    StreamStart: MessageAssembler._start,
    Done: MessageAssembler._done,
}
