"""Continuing a text reply that the output limit cut off.

With ``Limits.continue_on_max_tokens`` set, a reply cut by ``max_tokens``
that asked for no tool is kept, and the model is asked to go on from where it
stopped, with a larger output budget that stays for the rest of the run (a
cut reply that did ask for tools is never continued: its calls may be cut
mid-arguments, and are answered ``TOOL_NOT_STARTED`` as always).
"""

from __future__ import annotations

from ..messages import AssistantMessage

CONTINUE_PROMPT = (
    "Your previous reply was cut off by the output token limit. Continue it "
    "exactly where it stopped, without repeating anything or apologizing."
)


def should_continue(message: AssistantMessage) -> bool:
    return message.stop_reason == "max_tokens" and not message.tool_calls


def raised_budget(cut: AssistantMessage, budget: int | None, ceiling: int | None) -> int | None:
    """The output budget after ``cut`` ran out of ``budget`` (None: the
    adapter's own): twice what the reply used, up to ``ceiling``; unchanged
    without a ceiling, since no budget above the adapter's is known to be
    accepted."""
    if ceiling is None:
        return budget
    used = budget or cut.usage.output_tokens
    return min(ceiling, 2 * used) if used else ceiling
