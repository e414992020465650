"""Supervision (a leaf package shared by tool servers and agents): strategies for long-lived children: restarts by strategy,
restart intensity, escalation to the owner."""

from .events import ChildExit, ChildRestart, Escalation, SupervisorEvent
from .policy import RestartIntensity, RestartPolicy, Strategy, one_for_all, one_for_one, rest_for_one
from .supervisor import ChildSpec, OnEvent, Supervisor, SupervisorEscalation

__all__ = [
    "ChildExit",
    "ChildRestart",
    "ChildSpec",
    "Escalation",
    "OnEvent",
    "RestartIntensity",
    "RestartPolicy",
    "Strategy",
    "Supervisor",
    "SupervisorEscalation",
    "SupervisorEvent",
    "one_for_all",
    "one_for_one",
    "rest_for_one",
]
