"""Tools, their definitions and their execution."""

from .decorator import tool
from .tool import Tool, ToolContext, ToolResult

__all__ = ["Tool", "ToolContext", "ToolResult", "tool"]
