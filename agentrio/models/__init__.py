"""Model adapters and the normalized stream they all emit."""

from .assembler import MessageAssembler
from .errors import ProviderError
from .events import (
    Done,
    StreamError,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from .request import Model, ModelRequest, ToolSpec
from .scripted import ScriptedModel, message_events
from .validation import request_problems

__all__ = [
    "Done",
    "MessageAssembler",
    "Model",
    "ModelRequest",
    "ProviderError",
    "ScriptedModel",
    "StreamError",
    "StreamEvent",
    "StreamStart",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingStart",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolSpec",
    "message_events",
    "request_problems",
]
