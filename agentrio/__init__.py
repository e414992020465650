"""agentrio: LLM agents as supervised trio actors."""

from . import events
from .actors import (
    Agent,
    AgentDisposed,
    AgentScope,
    AgentSpec,
    CompactionFailed,
    CompactionOutcome,
    Hooks,
    Limits,
    PostTool,
    PreStep,
    Reject,
    RequestContext,
    RequestError,
    Route,
    RunResult,
    RunStream,
    Subscription,
    agent_tool,
)
from .journal import LeaseLost, MemoryStore, RemoteInput, SessionHeld, SQLiteStore, Store, StoreError
from .messages import (
    ABORTED_BEFORE_DISPATCH,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    AssistantMessage,
    Message,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    project_tool_protocol,
)
from .models import ProviderError, ScriptedModel
from .initiator import Initiator, current_initiator, with_initiator, without_initiator
from .supervisors import Runtime, run_sync
from .tracing import instrument, uninstrument
from .tools import Tool, ToolCallContext, ToolContext, ToolFatal, ToolRefused, ToolResult, tool
from .tools.sandbox import Sandbox, SandboxUnavailable

__all__ = [
    "ABORTED_BEFORE_DISPATCH",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "Agent",
    "AgentDisposed",
    "AgentScope",
    "AgentSpec",
    "AssistantMessage",
    "CompactionFailed",
    "CompactionOutcome",
    "Hooks",
    "Initiator",
    "LeaseLost",
    "Limits",
    "MemoryStore",
    "Message",
    "PostTool",
    "PostgresStore",
    "PreStep",
    "ProviderError",
    "Reject",
    "RemoteInput",
    "RequestContext",
    "RequestError",
    "Route",
    "RunResult",
    "RunStream",
    "Runtime",
    "SQLiteStore",
    "Sandbox",
    "SandboxUnavailable",
    "ScriptedModel",
    "SessionHeld",
    "Store",
    "StoreError",
    "Subscription",
    "Text",
    "Thinking",
    "Tool",
    "ToolCall",
    "ToolCallContext",
    "ToolContext",
    "ToolFatal",
    "ToolRefused",
    "ToolResult",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "agent_tool",
    "current_initiator",
    "events",
    "instrument",
    "project_tool_protocol",
    "run_sync",
    "tool",
    "uninstrument",
    "with_initiator",
    "without_initiator",
]


def __getattr__(name: str) -> object:
    # Imported on first use: it needs psycopg, an optional dependency.
    if name == "PostgresStore":
        from .journal.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
