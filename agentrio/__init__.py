"""agentrio: LLM agents as supervised trio actors."""

from . import events
from .actors import (
    Agent,
    AgentDisposed,
    AgentSpec,
    Hooks,
    Limits,
    PreStep,
    Reject,
    RequestContext,
    RequestError,
    RunResult,
)
from .journal import MemoryStore, SQLiteStore, Store, StoreError
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
from .supervisors import Runtime
from .tools import Tool, ToolCallContext, ToolContext, ToolRefused, ToolResult, tool

__all__ = [
    "ABORTED_BEFORE_DISPATCH",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "Agent",
    "AgentDisposed",
    "AgentSpec",
    "AssistantMessage",
    "Hooks",
    "Limits",
    "MemoryStore",
    "Message",
    "PreStep",
    "ProviderError",
    "Reject",
    "RequestContext",
    "RequestError",
    "RunResult",
    "Runtime",
    "SQLiteStore",
    "ScriptedModel",
    "Store",
    "StoreError",
    "Text",
    "Thinking",
    "Tool",
    "ToolCall",
    "ToolCallContext",
    "ToolContext",
    "ToolRefused",
    "ToolResult",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "events",
    "project_tool_protocol",
    "tool",
]
