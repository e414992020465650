"""Supervision: the Runtime, its registry of agents, initiators, and
supervisors that restart long-lived children by strategy."""

from ..initiator import Initiator, current_initiator, with_initiator, without_initiator
from ..supervision import (
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
from .registry import AgentRegistry
from .runtime import HIBERNATE_AFTER, Runtime, run_sync

__all__ = [
    "HIBERNATE_AFTER",
    "AgentRegistry",
    "ChildExit",
    "ChildRestart",
    "ChildSpec",
    "Escalation",
    "Initiator",
    "Runtime",
    "Supervisor",
    "SupervisorEscalation",
    "SupervisorEvent",
    "current_initiator",
    "one_for_all",
    "one_for_one",
    "rest_for_one",
    "run_sync",
    "with_initiator",
    "without_initiator",
]
