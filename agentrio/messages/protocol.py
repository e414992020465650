"""The tool-call protocol every provider enforces, and the projection onto it.

Providers reject a request whose tool results are not paired with the
assistant message that asked for them. History can break that pairing in many
ordinary ways (a cancel between a call and its result, a crash, a context
trimmed by a hook), so every request goes through ``project_tool_protocol``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

import attrs

from .messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from .parts import Part, Text, ToolCall

M = TypeVar("M", bound=UserMessage | AssistantMessage)

#: The codes of error results (``ToolResultMessage.error_code``): the call
#: named no tool there is, its arguments did not fit the tool, the tool
#: failed (raised, or reported an error), a policy, a person or a middleware
#: refused it.
TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
TOOL_INPUT_INVALID = "TOOL_INPUT_INVALID"
TOOL_FAILED = "TOOL_FAILED"
PERMISSION_DENIED = "PERMISSION_DENIED"

#: Recovery codes written into synthesized tool results. Each starts the
#: result's text so that a model, a log reader and a test can tell them apart.
TOOL_RESULT_MISSING = "TOOL_RESULT_MISSING"
TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
ABORTED_BEFORE_DISPATCH = "ABORTED_BEFORE_DISPATCH"
TOOL_ABORTED = "TOOL_ABORTED"

_EXPLANATIONS = {
    TOOL_RESULT_MISSING: "no result was recorded for this tool call.",
    TOOL_NOT_STARTED: "the run stopped before this tool call started; it had no effect.",
    TOOL_OUTCOME_UNKNOWN: (
        "the run stopped while this tool call was executing and its result was "
        "lost. Side effects may have happened: check the current state before "
        "retrying."
    ),
    ABORTED_BEFORE_DISPATCH: "the run was cancelled before this tool call started; it had no effect.",
    TOOL_ABORTED: (
        "the run was cancelled while this tool call was executing. It may have had partial effects."
    ),
}


def error_result(call: ToolCall, code: str, detail: str | None = None) -> ToolResultMessage:
    """An ``is_error`` result for ``call`` carrying a recovery ``code``, in
    its text and as its ``error_code``."""
    text = f"{code}: {detail or _EXPLANATIONS[code]}"
    return ToolResultMessage(
        tool_call_id=call.id, tool_name=call.name, content=[Text(text)], is_error=True, error_code=code
    )


def _is_blank(part: Part) -> bool:
    return isinstance(part, Text) and not part.text


def _without_blank_parts(message: M) -> M | None:
    """``message`` without blank text parts; None when nothing is left."""
    if isinstance(message.content, str):
        return message if message.content else None
    content = [p for p in message.content if not _is_blank(p)]
    if not content:
        return None
    if len(content) == len(message.content):
        return message
    return attrs.evolve(message, content=content)


def project_tool_protocol(messages: Iterable[Message]) -> list[Message]:
    """Return the provider-valid projection of ``messages``.

    - blank text parts are dropped, then messages left without content;
    - tool results whose call is not in a kept assistant message are dropped;
    - each result is placed right after the assistant message that asked for
      it, in the order of the calls (the first result for an id wins);
    - a call with no result gets a synthesized ``is_error`` result.
    """
    messages = list(messages)
    results: dict[str, ToolResultMessage] = {}
    for message in messages:
        if isinstance(message, ToolResultMessage):
            results.setdefault(message.tool_call_id, message)

    projected: list[Message] = []
    for message in messages:
        if isinstance(message, ToolResultMessage):
            continue
        kept = _without_blank_parts(message)
        if kept is None:
            continue
        projected.append(kept)
        if isinstance(kept, UserMessage):
            continue
        for call in kept.tool_calls:
            result = results.pop(call.id, None)
            projected.append(result or error_result(call, TOOL_RESULT_MISSING))
    return projected


class GrowingProjection:
    """``project_tool_protocol`` of a history that only grows, in O(1) per
    message.

    An agent writes history in protocol order (results right after their
    call, in call order), so its projection can grow with it. A message that
    would make the projection rewrite its past (a result out of order, a
    message while calls still wait) switches to projecting the whole history
    on each read, which is always correct.
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._projected: list[Message] = []
        self._waiting: list[ToolCall] = []  # unanswered calls of the last assistant message
        self._answered: set[str] = set()
        self._grown_out = False  # set once growing is impossible
        #: Everything appended, as appended.
        self.history: list[Message] = []
        for message in messages:
            self.append(message)

    def append(self, message: Message) -> None:
        self.history.append(message)
        if self._grown_out:
            return
        if isinstance(message, ToolResultMessage):
            call_id = message.tool_call_id
            if self._waiting and self._waiting[0].id == call_id:
                self._waiting.pop(0)
                self._answered.add(call_id)
                self._projected.append(message)
            elif call_id not in self._answered or any(c.id == call_id for c in self._waiting):
                self._grown_out = True
            return  # a duplicate of a result already placed: dropped
        if self._waiting:
            self._grown_out = True
            return
        kept = _without_blank_parts(message)
        if kept is None:
            return
        self._projected.append(kept)
        if isinstance(kept, AssistantMessage):
            calls = kept.tool_calls
            if self._answered.intersection(c.id for c in calls) or len({c.id for c in calls}) < len(calls):
                self._grown_out = True  # reused ids: only the full projection knows
            self._waiting = list(calls)

    def mirrors(self, messages: Sequence[Message]) -> bool:
        """Whether ``messages`` is still the history this was grown from.

        History only grows between two checks, or is replaced: a compaction
        swaps its head for a new summary, a restore decodes new messages. So
        the same length and the same first and last objects mean the same
        history, in O(1).
        """
        history = self.history
        return len(history) == len(messages) and (
            not history or (history[0] is messages[0] and history[-1] is messages[-1])
        )

    def messages(self) -> list[Message]:
        """The projection of everything appended so far (a new list)."""
        if self._grown_out:
            return project_tool_protocol(self.history)
        return self._projected + [error_result(c, TOOL_RESULT_MISSING) for c in self._waiting]


def unanswered_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """Tool calls in ``messages`` with no result in it, in model order."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    return [
        call
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
        if call.id not in answered
    ]
