"""agentrio: LLM agents as supervised trio actors."""

from . import events
from .actors import (
    Agent,
    AgentDisposed,
    AgentScope,
    AgentSpec,
    Hooks,
    Limits,
    PreStep,
    Reject,
    RequestContext,
    RequestError,
    RunResult,
    agent_tool,
)
from .journal import MemoryStore, Store
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
from .supervisors import Runtime
from .tools import Tool, ToolCallContext, ToolContext, ToolRefused, ToolResult, tool

__all__ = [
    "ABORTED_BEFORE_DISPATCH",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "Agent",
    "AgentDisposed",
    "AgentScope",
    "AgentSpec",
    "AssistantMessage",
    "Hooks",
    "Initiator",
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
    "ScriptedModel",
    "Store",
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
    "agent_tool",
    "current_initiator",
    "events",
    "project_tool_protocol",
    "tool",
    "with_initiator",
    "without_initiator",
]
