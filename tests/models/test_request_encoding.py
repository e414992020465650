"""Whatever a session holds, its next request can be encoded and sent."""

from __future__ import annotations

import math

import pytest

from agentrio.messages import AssistantMessage, Text, ToolCall, ToolResultMessage, UserMessage
from agentrio.models import Done, ModelRequest, OpenAIChat, ProviderError

from .loopback import Reply
from .test_transport import ANTHROPIC_END, ANTHROPIC_START, anthropic


async def test_a_lone_surrogate_in_history_is_sent_as_a_replacement_not_a_failure(server):
    # os.listdir() of a name that is not UTF-8 gives such a string
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    history = [
        UserMessage(f"read {name}"),
        AssistantMessage([ToolCall("c1", "ls", {"path": name})]),
        ToolResultMessage("c1", "ls", [Text(name)]),
    ]
    server.reply(Reply(chunks=[ANTHROPIC_START, ANTHROPIC_END]))
    events = [e async for e in anthropic(server).stream(ModelRequest("", history))]
    assert isinstance(events[-1], Done)
    sent = server.requests[0].json()["messages"]
    assert sent[0]["content"][0]["text"] == "read caf?.txt"
    assert sent[1]["content"][0]["input"] == {"path": "caf?.txt"}


async def test_a_request_json_cannot_hold_is_a_provider_error_not_a_crash(server):
    model = OpenAIChat("m", base_url=server.url, api_key="k", temperature=math.nan)
    with pytest.raises(ProviderError) as raised:
        async for _ in model.stream(ModelRequest("", [UserMessage("hi")])):
            pass
    assert raised.value.type == "invalid_request"
    assert "cannot be sent as JSON" in raised.value.message
    assert server.requests == []
