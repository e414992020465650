"""What an MCP tool call gives back, as an agentrio ``ToolResult``.

An image block becomes an ``Image`` when it is one every provider takes
(see ``agentrio.messages.media``); every other block becomes text: text as
it is, embedded text resources with their URI, and a short note for what
cannot be shown (audio, binary resources, an image refused). Structured
content goes to ``details`` for a UI or a log, and becomes the text (as
JSON) when the server sent no text beside it.
"""

from __future__ import annotations

import base64
import binascii
import json

import mcp.types as mcp_types

from ..messages import Image, Part, Text
from .tool import ToolResult


def tool_result(result: mcp_types.CallToolResult) -> ToolResult:
    parts = [_part(block) for block in result.content]
    structured = result.structured_content
    if structured is not None and not any(isinstance(b, mcp_types.TextContent) for b in result.content):
        parts.append(Text(json.dumps(structured, ensure_ascii=False)))
    return ToolResult(parts, is_error=bool(result.is_error), details=structured)


def _part(block: mcp_types.ContentBlock) -> Part:
    if isinstance(block, mcp_types.ImageContent):
        try:
            return Image(base64.b64decode(block.data, validate=True), block.mime_type)
        except (binascii.Error, ValueError):
            pass  # not an image a provider takes: a note says what it was
    return Text(_as_text(block))


def _as_text(block: mcp_types.ContentBlock) -> str:
    match block:
        case mcp_types.TextContent():
            return block.text
        case mcp_types.ImageContent() | mcp_types.AudioContent():
            return f"[{block.mime_type} {block.type}, not shown]"
        case mcp_types.ResourceLink():
            return f"[resource {block.name}: {block.uri}]"
        case mcp_types.EmbeddedResource(resource=mcp_types.TextResourceContents() as resource):
            return f"[resource {resource.uri}]\n{resource.text}"
        case mcp_types.EmbeddedResource(resource=resource):
            return f"[resource {resource.uri} ({resource.mime_type or 'binary'}), not shown]"
    return f"[{block.type} content, not shown]"
