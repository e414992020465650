"""agentrio: LLM agents as supervised trio actors.

The public names are imported on first use (module ``__getattr__``), so that
``import agentrio`` and the ``agentrio`` command start quickly: a program
pays for the parts it touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

#: Each public name and the module that defines it (relative to the package).
_WHERE = {
    "ABORTED_BEFORE_DISPATCH": ".messages",
    "Agent": ".actors",
    "AgentDisposed": ".actors",
    "AgentScope": ".actors",
    "AgentSpec": ".actors",
    "AssistantMessage": ".messages",
    "CompactionFailed": ".actors",
    "CompactionOutcome": ".actors",
    "Document": ".messages",
    "FallbackModel": ".models",
    "Hooks": ".actors",
    "Image": ".messages",
    "Initiator": ".initiator",
    "LeaseLost": ".journal",
    "Limits": ".actors",
    "MemoryStore": ".journal",
    "Outcome": ".journal",
    "Message": ".messages",
    "PostTool": ".actors",
    "PostgresStore": ".journal.postgres",
    "PreStep": ".actors",
    "Price": ".models",
    "Prices": ".models",
    "ProviderError": ".models",
    "Reject": ".actors",
    "RemoteInput": ".journal",
    "RequestContext": ".actors",
    "RequestError": ".actors",
    "Route": ".actors",
    "RunResult": ".actors",
    "RunStream": ".actors",
    "Runtime": ".supervisors",
    "SQLiteStore": ".journal",
    "Sandbox": ".tools.sandbox",
    "SandboxUnavailable": ".tools.sandbox",
    "ScriptedModel": ".models",
    "SessionHeld": ".journal",
    "Store": ".journal",
    "StoreError": ".journal",
    "Subscription": ".actors",
    "TOOL_NOT_STARTED": ".messages",
    "TOOL_OUTCOME_UNKNOWN": ".messages",
    "Text": ".messages",
    "Thinking": ".messages",
    "TodoItem": ".tools.todo",
    "Tool": ".tools",
    "ToolCall": ".messages",
    "ToolCallContext": ".tools",
    "ToolContext": ".tools",
    "ToolFatal": ".tools",
    "ToolRefused": ".tools",
    "ToolResult": ".tools",
    "ToolResultMessage": ".messages",
    "Usage": ".messages",
    "UserMessage": ".messages",
    "agent_tool": ".actors",
    "current_initiator": ".initiator",
    "current_todos": ".tools.todo",
    "events": ".",
    "instrument": ".tracing",
    "project_tool_protocol": ".messages",
    "run_sync": ".supervisors",
    "serve_mcp": ".gateway.mcp_serve",
    "todo_tool": ".tools.todo",
    "tool": ".tools",
    "uninstrument": ".tracing",
    "with_initiator": ".initiator",
    "without_initiator": ".initiator",
}

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
    "Document",
    "FallbackModel",
    "Hooks",
    "Image",
    "Initiator",
    "LeaseLost",
    "Limits",
    "MemoryStore",
    "Message",
    "Outcome",
    "PostTool",
    "PostgresStore",
    "PreStep",
    "Price",
    "Prices",
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
    "TodoItem",
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
    "current_todos",
    "events",
    "instrument",
    "project_tool_protocol",
    "run_sync",
    "serve_mcp",
    "todo_tool",
    "tool",
    "uninstrument",
    "with_initiator",
    "without_initiator",
]


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module(module, __name__)
    if name != "events":
        value = getattr(value, name)
    globals()[name] = value  # found at once next time
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


if TYPE_CHECKING:
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
    )

    # From their modules: the packages' submodules of the same name would
    # shadow them for the checker.
    from .actors.agent_tool import agent_tool
    from .gateway.mcp_serve import serve_mcp
    from .initiator import Initiator, current_initiator, with_initiator, without_initiator
    from .journal import (
        LeaseLost,
        MemoryStore,
        Outcome,
        RemoteInput,
        SessionHeld,
        SQLiteStore,
        Store,
        StoreError,
    )
    from .journal.postgres import PostgresStore
    from .messages import (
        ABORTED_BEFORE_DISPATCH,
        TOOL_NOT_STARTED,
        TOOL_OUTCOME_UNKNOWN,
        AssistantMessage,
        Document,
        Image,
        Message,
        Text,
        Thinking,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
        project_tool_protocol,
    )
    from .models import FallbackModel, Price, Prices, ProviderError, ScriptedModel
    from .supervisors import Runtime, run_sync
    from .tools import Tool, ToolCallContext, ToolContext, ToolFatal, ToolRefused, ToolResult
    from .tools.decorator import tool
    from .tools.sandbox import Sandbox, SandboxUnavailable
    from .tools.todo import TodoItem, current_todos, todo_tool
    from .tracing import instrument, uninstrument
