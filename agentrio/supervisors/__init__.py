"""Supervision: the Runtime and its registry of agents, and supervisors that
restart long-lived children by strategy."""

from .registry import AgentRegistry
from .runtime import Runtime
from .strategies import (
    ChildExit,
    ChildRestart,
    ChildSpec,
    Escalation,
    Supervisor,
    SupervisorEscalation,
    SupervisorEvent,
    one_for_all,
    one_for_one,
    rest_for_one,
)

__all__ = [
    "AgentRegistry",
    "ChildExit",
    "ChildRestart",
    "ChildSpec",
    "Escalation",
    "Runtime",
    "Supervisor",
    "SupervisorEscalation",
    "SupervisorEvent",
    "one_for_all",
    "one_for_one",
    "rest_for_one",
]
