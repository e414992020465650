"""Tools, their definitions and their execution."""

from .decorator import tool
from .middleware import Middleware, ToolCallContext, ToolRefused
from .tool import Tool, ToolContext, ToolResult

__all__ = ["Middleware", "Tool", "ToolCallContext", "ToolContext", "ToolRefused", "ToolResult", "tool"]
