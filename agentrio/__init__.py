"""agentrio: LLM agents as supervised trio actors."""

from .messages import (
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
from .tools import Tool, ToolContext, ToolResult, tool
