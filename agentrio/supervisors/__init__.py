"""Supervision: the Runtime, its registry of agents, and initiators."""

from ..initiator import Initiator, current_initiator, with_initiator, without_initiator
from .registry import AgentRegistry
from .runtime import Runtime

__all__ = [
    "AgentRegistry",
    "Initiator",
    "Runtime",
    "current_initiator",
    "with_initiator",
    "without_initiator",
]
