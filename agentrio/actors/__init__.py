"""The agent actor, its activities, the model stream and the tool pool."""

from .agent import Agent, AgentDisposed
from .spec import AgentSpec, Hooks, Limits, PreStep, Reject, RequestContext, RequestError, RunResult

__all__ = [
    "Agent",
    "AgentDisposed",
    "AgentSpec",
    "Hooks",
    "Limits",
    "PreStep",
    "Reject",
    "RequestContext",
    "RequestError",
    "RunResult",
]
