"""Who started the work at hand: which agent, and which of its tool calls.

The initiator travels in a context variable, so it follows work into the
tasks it spawns. Host-driven work (timers, goals, a gateway) runs under
``without_initiator()`` and is therefore never attributed to whatever tool
call happened to create the task that runs it.
"""

from __future__ import annotations

import contextvars

import attrs


@attrs.frozen
class Initiator:
    agent_id: str
    tool_call_id: str | None = None


_initiator: contextvars.ContextVar[Initiator | None] = contextvars.ContextVar(
    "agentrio_initiator", default=None
)


def current_initiator() -> Initiator | None:
    """The initiator of the work running in this task, if any."""
    return _initiator.get()


class with_initiator:
    """Attribute the work inside the block (and tasks it spawns) to ``initiator``.

    A class rather than a generator: every tool call enters one.
    """

    __slots__ = ("_initiator", "_token")

    def __init__(self, initiator: Initiator | None) -> None:
        self._initiator = initiator

    def __enter__(self) -> Initiator | None:
        self._token = _initiator.set(self._initiator)
        return self._initiator

    def __exit__(self, *exc_info: object) -> None:
        _initiator.reset(self._token)


def clear_initiator() -> None:
    """Attribute the rest of the current task to no agent: for the entry
    point of a task that is host-driven work. Trio gives every task its own
    copy of the context, so nothing outside the task sees the change and
    nothing needs undoing (unlike ``without_initiator``, it keeps nothing
    alive for the task's life)."""
    if _initiator.get() is not None:
        _initiator.set(None)


def without_initiator() -> with_initiator:
    """Run the block as host-driven work, attributed to no agent."""
    return with_initiator(None)
