"""The recorded provider interactions of tests/conformance, and the
history each recorded request stands for.

Reading a recorded request back into our messages lets a test ask: given
the same history, does our adapter send the same thing?
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentrio.messages import AssistantMessage, Text, Thinking, ToolCall, ToolResultMessage, UserMessage
from agentrio.models import Anthropic, ModelRequest, OpenAIChat, OpenAIResponses, ToolSpec

CORPUS = Path(__file__).resolve().parents[1] / "conformance" / "provider-streams"
RECORDINGS = {
    path.name[:2]: json.loads(path.read_text()) for path in sorted(CORPUS.glob("[0-9][0-9]_*.json"))
}

ADAPTERS = {"openai-chat": OpenAIChat, "openai-responses": OpenAIResponses, "anthropic": Anthropic}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or ())


class _History:
    """Collects messages, grouping consecutive assistant parts into one message."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.messages: list = []
        self._parts: list = []
        self._names: dict[str, str] = {}

    def assistant(self, part) -> None:
        if isinstance(part, ToolCall):
            self._names[part.id] = part.name
        self._parts.append(part)

    def other(self, message) -> None:
        self.end_assistant()
        self.messages.append(message)

    def result(self, call_id: str, output: Any, is_error: bool = False) -> None:
        self.other(ToolResultMessage(call_id, self._names.get(call_id, ""), [Text(_text(output))], is_error))

    def end_assistant(self) -> None:
        if self._parts:
            self.messages.append(AssistantMessage(self._parts, provider=self.provider))
            self._parts = []

    def done(self) -> list:
        self.end_assistant()
        return self.messages


def _chat(body: dict[str, Any]) -> tuple[ModelRequest, dict[str, Any]]:
    history = _History("openai")
    system = ""
    for message in body["messages"]:
        role = message["role"]
        if role in ("system", "developer"):
            system = _text(message["content"])
        elif role == "user":
            history.other(UserMessage(_text(message["content"])))
        elif role == "tool":
            history.result(message["tool_call_id"], message["content"])
        else:
            history.end_assistant()  # each recorded assistant message stays one
            if message.get("content"):
                history.assistant(Text(_text(message["content"])))
            for call in message.get("tool_calls") or ():
                function = call["function"]
                history.assistant(
                    ToolCall(call["id"], function["name"], json.loads(function["arguments"] or "{}"))
                )
    tools = [
        ToolSpec(t["function"]["name"], t["function"].get("description") or "", t["function"]["parameters"])
        for t in body.get("tools") or ()
    ]
    options = {
        "max_tokens": body.get("max_completion_tokens"),
        "temperature": body.get("temperature"),
        "reasoning_effort": body.get("reasoning_effort"),
    }
    if system and body["messages"][0]["role"] == "developer":
        options["system_role"] = "developer"
    return ModelRequest(system, history.done(), tools), options


def _responses(body: dict[str, Any]) -> tuple[ModelRequest, dict[str, Any]]:
    history = _History("openai-responses")
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "message" and item["role"] == "user":
            history.other(UserMessage(_text(item["content"])))
        elif kind == "message":
            history.assistant(Text(_text(item["content"])))
        elif kind == "reasoning":
            summary = "\n\n".join(s["text"] for s in item.get("summary") or ())
            history.assistant(Thinking(summary, signature=item.get("encrypted_content"), id=item["id"]))
        elif kind == "function_call":
            history.assistant(ToolCall(item["call_id"], item["name"], json.loads(item["arguments"] or "{}")))
        elif kind == "function_call_output":
            history.result(item["call_id"], item["output"])
    tools = [
        ToolSpec(t["name"], t.get("description") or "", t["parameters"]) for t in body.get("tools") or ()
    ]
    reasoning = body.get("reasoning") or {}
    options = {
        "max_tokens": body.get("max_output_tokens"),
        "temperature": body.get("temperature"),
        "reasoning_effort": reasoning.get("effort"),
        "reasoning_summary": reasoning.get("summary"),
        "store": body.get("store", False),
    }
    return ModelRequest(body.get("instructions") or "", history.done(), tools), options


def _anthropic(body: dict[str, Any]) -> tuple[ModelRequest, dict[str, Any]]:
    history = _History("anthropic")
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if message["role"] == "assistant":
            history.end_assistant()
        for block in blocks:
            kind = block["type"]
            if kind == "tool_result":
                history.result(block["tool_use_id"], block["content"], block.get("is_error", False))
            elif message["role"] == "user":
                history.other(UserMessage(block["text"]))
            elif kind == "text":
                history.assistant(Text(block["text"]))
            elif kind == "thinking":
                history.assistant(Thinking(block["thinking"], signature=block["signature"]))
            elif kind == "redacted_thinking":
                history.assistant(Thinking("", signature=block["data"], redacted=True))
            elif kind == "tool_use":
                history.assistant(ToolCall(block["id"], block["name"], block["input"]))
    tools = [
        ToolSpec(t["name"], t.get("description") or "", t["input_schema"])
        for t in body.get("tools") or ()
        if "input_schema" in t  # server tools are not ours to describe
    ]
    thinking = body.get("thinking") or {}
    options = {
        "max_tokens": body["max_tokens"],
        "temperature": body.get("temperature"),
        "thinking_budget": thinking.get("budget_tokens"),
    }
    return ModelRequest(_text(body.get("system") or ""), history.done(), tools), options


_READERS = {"openai-chat": _chat, "openai-responses": _responses, "anthropic": _anthropic}


def recorded_request(recording: dict[str, Any]) -> tuple[ModelRequest, dict[str, Any]]:
    """The request and adapter options the recorded request body stands for."""
    request, options = _READERS[recording["provider"]](recording["request"]["body"])
    return request, {k: v for k, v in options.items() if v is not None}


def adapter_for(recording: dict[str, Any], **options: Any):
    model = recording["request"]["body"].get("model", "unknown")
    return ADAPTERS[recording["provider"]](model, api_key="test-key", **options)
