"""Messages, their parts, usage, the cattrs converter and the tool-call protocol."""

from .checks import json_data, json_problem
from .converter import converter, register_tagged_union
from .media import MAX_DOCUMENT_BYTES, MAX_IMAGE_BYTES, Document, Image
from .messages import (
    TRUNCATED_STOP_REASONS,
    AssistantMessage,
    Message,
    StopReason,
    ToolResultMessage,
    UserMessage,
    is_str_or_parts,
)
from .parts import Part, Text, Thinking, ToolCall
from .protocol import (
    ABORTED_BEFORE_DISPATCH,
    PERMISSION_DENIED,
    TOOL_ABORTED,
    TOOL_FAILED,
    TOOL_INPUT_INVALID,
    TOOL_NOT_FOUND,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    TOOL_RESULT_MISSING,
    error_result,
    project_tool_protocol,
    unanswered_calls,
)
from .usage import Usage

__all__ = [
    "ABORTED_BEFORE_DISPATCH",
    "MAX_DOCUMENT_BYTES",
    "MAX_IMAGE_BYTES",
    "PERMISSION_DENIED",
    "TOOL_ABORTED",
    "TOOL_FAILED",
    "TOOL_INPUT_INVALID",
    "TOOL_NOT_FOUND",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "TOOL_RESULT_MISSING",
    "TRUNCATED_STOP_REASONS",
    "AssistantMessage",
    "Document",
    "Image",
    "Message",
    "Part",
    "StopReason",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "converter",
    "error_result",
    "is_str_or_parts",
    "json_data",
    "json_problem",
    "project_tool_protocol",
    "register_tagged_union",
    "unanswered_calls",
]
