"""Prompt caching is asked for by default and not at all with
AgentSpec(prompt_cache=False): the fields each provider reads, in the exact
JSON sent to the loopback fake providers."""

from __future__ import annotations

import pytest

from agentrio import AgentSpec, Runtime, tool
from agentrio.messages import AssistantMessage, Text, ToolCall
from agentrio.models import Anthropic, OpenAIChat, OpenAIResponses
from agentrio.models.openai_chat import cache_key
from agentrio.models.request import ModelRequest

from ..fake_anthropic import start_fake_anthropic
from ..fake_openai import start_fake_openai

MARK = {"type": "ephemeral"}


@tool
async def look() -> str:
    """Look around."""
    return "a room"


def replies() -> list[AssistantMessage]:
    return [AssistantMessage([ToolCall("c1", "look", {})]), AssistantMessage([Text("A room.")])]


async def run(model, *, prompt_cache: bool) -> str:
    async with Runtime() as rt:
        agent = await rt.create(
            AgentSpec("a", model, system_prompt="Be brief.", tools=[look], prompt_cache=prompt_cache),
            session_id="s-42",
        )
        result = await agent.run("Where am I?")
    assert result.stop_reason == "completed", result.error
    return agent.session_id


@pytest.mark.parametrize("on", [True, False])
async def test_anthropic_marks_tools_system_and_the_latest_turn_and_moves_the_mark_as_history_grows(
    nursery, on
):
    server = await start_fake_anthropic(nursery, replies())
    await run(Anthropic("fake", base_url=server.base_url, api_key="k"), prompt_cache=on)
    first, second = (r.body for r in server.requests)
    if not on:
        assert first["system"] == "Be brief." and second["system"] == "Be brief."
        assert "cache_control" not in str([first, second])
        return
    for body in (first, second):
        assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": MARK}]
        assert body["tools"][-1]["cache_control"] == MARK
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Where am I?", "cache_control": MARK}]}
    ]
    # The mark moved to the newest turn (the tool result); the first turn lost its own.
    assert second["messages"][0] == {"role": "user", "content": [{"type": "text", "text": "Where am I?"}]}
    assert second["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "a room", "cache_control": MARK}
    ]
    marks = str(second).count("cache_control")
    assert marks == 3  # at most the 4 Anthropic allows


@pytest.mark.parametrize("adapter", [OpenAIChat, OpenAIResponses])
@pytest.mark.parametrize("on", [True, False])
async def test_openai_sends_the_session_id_as_prompt_cache_key_unless_turned_off(nursery, adapter, on):
    server = await start_fake_openai(nursery, replies())
    session = await run(
        adapter("fake", base_url=server.base_url, api_key="k", prompt_cache=True), prompt_cache=on
    )
    for request in server.requests:
        if on:
            assert request.body["prompt_cache_key"] == session == "s-42"
        else:
            assert "prompt_cache_key" not in request.body


def test_openai_sends_the_key_by_default_only_to_openai_itself():
    request = ModelRequest("", [], cache_key="s1")
    assert cache_key(request, None, "https://api.openai.com/v1") == "s1"
    assert cache_key(request, None, "http://localhost:11434/v1") is None
    assert cache_key(request, True, "http://localhost:11434/v1") == "s1"
    assert cache_key(ModelRequest("", [], cache_key="s1", prompt_cache=False), True, "x") is None
