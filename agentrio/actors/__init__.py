"""The agent actor, its activities, the model stream and the tool pool."""

from .agent import Agent, AgentDisposed, RunStream, Setup
from .bus import Subscription
from .agent_tool import agent_tool
from .scope import AgentScope
from .spec import AgentSpec, Hooks, Limits, PreStep, Reject, RequestContext, RequestError, RunResult

__all__ = [
    "Agent",
    "AgentDisposed",
    "AgentScope",
    "AgentSpec",
    "Hooks",
    "Limits",
    "PreStep",
    "Reject",
    "RequestContext",
    "RequestError",
    "RunResult",
    "RunStream",
    "Setup",
    "Subscription",
    "agent_tool",
]
