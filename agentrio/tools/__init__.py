"""Tools, their definitions and their execution."""

from .decorator import tool
from .middleware import Middleware, ToolCallContext, ToolFatal, ToolRefused
from .process import ProcessResult, run_process
from .tool import Tool, ToolContext, ToolResult

__all__ = [
    "Middleware",
    "ProcessResult",
    "Tool",
    "ToolCallContext",
    "ToolContext",
    "ToolFatal",
    "ToolRefused",
    "ToolResult",
    "run_process",
    "tool",
]
