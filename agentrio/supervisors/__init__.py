"""Supervision: the Runtime and its registry of agents."""

from .registry import AgentRegistry
from .runtime import Runtime

__all__ = ["AgentRegistry", "Runtime"]
