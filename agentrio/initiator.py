"""Who started the work at hand: which agent, and which of its tool calls.

The initiator travels in a context variable, so it follows work into the
tasks it spawns. Host-driven work (timers, goals, a gateway) runs under
``without_initiator()`` and is therefore never attributed to whatever tool
call happened to create the task that runs it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

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


@contextmanager
def with_initiator(initiator: Initiator | None) -> Iterator[Initiator | None]:
    """Attribute the work inside the block (and tasks it spawns) to ``initiator``."""
    token = _initiator.set(initiator)
    try:
        yield initiator
    finally:
        _initiator.reset(token)


def without_initiator():
    """Run the block as host-driven work, attributed to no agent."""
    return with_initiator(None)
