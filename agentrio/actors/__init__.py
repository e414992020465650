"""The agent actor, its activities, the model stream and the tool pool."""

from .agent import Agent, AgentDisposed, RunStream, Setup
from .agent_tool import agent_tool
from .bus import Subscription
from .compaction import CompactionFailed, CompactionOutcome
from .scope import AgentScope
from .spec import (
    AgentSpec,
    Hooks,
    Limits,
    PostTool,
    PreStep,
    Reject,
    RequestContext,
    RequestError,
    Route,
    RunResult,
)

__all__ = [
    "Agent",
    "AgentDisposed",
    "AgentScope",
    "AgentSpec",
    "CompactionFailed",
    "CompactionOutcome",
    "Hooks",
    "Limits",
    "PostTool",
    "PreStep",
    "Reject",
    "RequestContext",
    "RequestError",
    "Route",
    "RunResult",
    "RunStream",
    "Setup",
    "Subscription",
    "agent_tool",
]
