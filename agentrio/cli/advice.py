"""What to do next after a run that stopped short, by its stop reason: one
line, for ``agentrio run`` (a command to type) or for ``chat`` (what to say,
or which slash command)."""

from __future__ import annotations

#: What happened, by stop reason; a reason not here gets no advice (completed,
#: cancelled, refused by a person, or an error the transcript explains).
_WHAT = {
    "max_turns": "it used its {max_turns} model requests",
    "max_tool_calls": "it stopped at its limit of tool calls",
    "max_tokens": "the reply stopped at the model's output limit",
    "budget": "it spent its cost budget (a new run has a new one)",
    "timeout": "it ran out of time",
    "model_error": "the model request failed",
    "context_overflow": "the conversation no longer fits the model's context",
    "compaction_failed": "the conversation no longer fits the model's context (compacting it failed)",
}
_OVERFLOW = ("context_overflow", "compaction_failed")


def advice(stop_reason: str, *, max_turns: int | None, session_id: str | None = None) -> str | None:
    """The line said after a run that ended with ``stop_reason``, or None.
    With ``session_id`` it is for ``agentrio run`` and names the command that
    continues that session; without, for ``chat``, where typing continues."""
    what = _WHAT.get(stop_reason)
    if what is None:
        return None
    what = what.format(max_turns=max_turns or "allowed")
    run = session_id is not None
    if stop_reason in _OVERFLOW:
        how = (
            f"fork it at an earlier message (agentrio sessions show {session_id} numbers them, "
            f"agentrio sessions fork {session_id} --at N takes one) or start a new session"
            if run
            else "/fork N at an earlier message, or /clear for a new session"
        )
    else:
        how = (
            f"continue with: agentrio run --resume {session_id} 'continue'"
            if run
            else "say 'continue' to go on"
        )
    if stop_reason == "max_turns":
        how += f" ({'raise' if run else 'start chat with a higher'} --max-turns for longer runs)"
    elif stop_reason == "model_error":
        how += " (check --model and --base-url if it fails again)" if run else " (/model switches models)"
    return f"{what}: {how}"
