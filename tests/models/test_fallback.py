"""FallbackModel: a request its first model cannot answer, past that
model's retries, goes to the next one (event model_fallback); a request the
provider calls wrong does not. Real adapters against loopback fake
providers."""

from __future__ import annotations

import socket

import pytest

from agentrio import AgentSpec, Runtime
from agentrio.messages import AssistantMessage, Text, UserMessage
from agentrio.models import (
    Anthropic,
    FallbackModel,
    ModelRequest,
    OpenAIChat,
    ProviderError,
    RetryPolicy,
    ScriptedModel,
)

from ..conftest import record
from ..fake_anthropic import start_fake_anthropic
from ..fake_openai import HTTPError, start_fake_openai

#: Two attempts, no wait between them: the retries come before a fallback.
TWICE = RetryPolicy(max_attempts=2, base_delay=0.0, jitter=0.0)


async def servers(nursery, anthropic_replies, openai_replies):
    anthropic = await start_fake_anthropic(nursery, anthropic_replies)
    openai = await start_fake_openai(nursery, openai_replies)
    first = Anthropic("claude", base_url=anthropic.base_url, api_key="k", retry_policy=TWICE)
    second = OpenAIChat("gpt", base_url=openai.base_url, api_key="k", retry_policy=TWICE)
    return anthropic, openai, FallbackModel(first, second)


async def run(model):
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model))
        async with record(agent) as events:
            result = await agent.run("hello")
        return result, events


@pytest.mark.parametrize("status", [529, 503, 500, 429])
async def test_a_provider_that_stays_unwell_past_its_retries_hands_the_request_to_the_next_model(
    nursery, status
):
    anthropic, openai, model = await servers(
        nursery, [HTTPError(status, "unwell")] * 2, [AssistantMessage([Text("From the fallback.")])]
    )
    result, events = await run(model)
    assert (result.stop_reason, result.text) == ("completed", "From the fallback.")
    assert result.new_messages[-1].provider == "openai" and result.steps == 1
    assert events.types()[:8] == [
        "agent_start",
        "turn_start",
        "step_start",
        "message_start",
        "message_end",
        "request_retry",
        "model_fallback",
        "message_start",
    ]
    (fallback,) = events.of("model_fallback")
    assert (fallback.from_model, fallback.to_model, fallback.error.status) == (
        "anthropic:claude",
        "openai:gpt",
        status,
    )
    # Both servers saw the same conversation.
    assert len(anthropic.requests) == 2 and len(openai.requests) == 1
    assert anthropic.requests[0].body["messages"][0]["content"][0]["text"] == "hello"
    assert openai.requests[0].body["messages"] == [{"role": "user", "content": "hello"}]


async def test_a_request_the_provider_calls_wrong_does_not_fall_back(nursery):
    anthropic, openai, model = await servers(nursery, [HTTPError(400, "bad request")], [])
    result, events = await run(model)
    assert result.stop_reason == "model_error" and "bad request" in result.error
    assert events.of("model_fallback") == [] and events.of("request_retry") == []
    assert len(anthropic.requests) == 1 and openai.requests == []


async def test_a_provider_that_cannot_be_reached_hands_the_request_to_the_next_model(nursery):
    with socket.socket() as closed:  # a port nothing listens on: connections are refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    openai = await start_fake_openai(nursery, [AssistantMessage([Text("Reached.")])])
    model = FallbackModel(
        Anthropic("claude", base_url=f"http://127.0.0.1:{port}", api_key="k", retry_policy=TWICE),
        OpenAIChat("gpt", base_url=openai.base_url, api_key="k"),
    )
    result, events = await run(model)
    assert result.text == "Reached."
    (fallback,) = events.of("model_fallback")
    assert fallback.error.type == "connection_error"


async def test_the_last_model_failing_ends_the_run_with_its_error(nursery):
    _, openai, model = await servers(
        nursery, [HTTPError(529, "overloaded")] * 2, [HTTPError(503, "down")] * 2
    )
    result, events = await run(model)
    assert result.stop_reason == "model_error" and "down" in result.error
    assert len(events.of("model_fallback")) == 1 and len(openai.requests) == 2


def test_a_list_of_models_in_a_spec_is_a_fallback_model_in_that_order(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a")
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    spec = AgentSpec("a", ["anthropic:claude-sonnet-4-5", "openai:gpt-4.1"])
    assert isinstance(spec.model, FallbackModel)
    assert [(m.provider, m.model) for m in spec.model.models] == [
        ("anthropic", "claude-sonnet-4-5"),
        ("openai", "gpt-4.1"),
    ]
    with pytest.raises(ValueError, match="empty list"):
        AgentSpec("a", [])


async def test_outside_an_agent_stream_falls_back_before_the_first_event():
    first = ScriptedModel(
        [ProviderError(status=503, message="down"), ProviderError(status=400, message="bad")]
    )
    second = ScriptedModel([AssistantMessage([Text("ok")])])
    model = FallbackModel(first, second)
    events = [e async for e in model.stream(ModelRequest("", [UserMessage("hi")]))]
    assert events[-1].stop_reason == "stop" and len(second.requests) == 1
    with pytest.raises(ProviderError, match="bad"):
        async for _ in model.stream(ModelRequest("", [UserMessage("hi")])):
            pass
