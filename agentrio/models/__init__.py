"""Model adapters and the normalized stream they all emit."""

from .anthropic import Anthropic
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
from .fallback import FallbackModel
from .http import open_http_client, shared_http_client
from .model_string import from_string
from .openai_chat import OpenAIChat
from .openai_responses import OpenAIResponses
from .output import OUTPUT_TOOL, OutputInvalid, OutputSpec
from .prices import BUILTIN_PRICES, Price, Prices
from .provider_errors import CONNECTION_ERROR, CONTEXT_OVERFLOW
from .request import Model, ModelRequest, ToolSpec
from .retry import RetryPolicy
from .scripted import ScriptedModel, message_events
from .validation import request_problems

__all__ = [
    "BUILTIN_PRICES",
    "CONNECTION_ERROR",
    "CONTEXT_OVERFLOW",
    "OUTPUT_TOOL",
    "Anthropic",
    "Done",
    "FallbackModel",
    "MessageAssembler",
    "Model",
    "ModelRequest",
    "OpenAIChat",
    "OpenAIResponses",
    "OutputInvalid",
    "OutputSpec",
    "Price",
    "Prices",
    "ProviderError",
    "RetryPolicy",
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
    "from_string",
    "message_events",
    "open_http_client",
    "request_problems",
    "shared_http_client",
]
