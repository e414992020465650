"""Tools, their definitions and their execution."""

from .decorator import tool
from .process import ProcessResult, run_process
from .tool import Tool, ToolContext, ToolResult

__all__ = ["ProcessResult", "Tool", "ToolContext", "ToolResult", "run_process", "tool"]
