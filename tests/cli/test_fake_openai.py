"""The fake Chat Completions server speaks the protocol the real adapter reads."""

from __future__ import annotations

import pytest
import trio

from agentrio.messages import AssistantMessage, Text, ToolCall, Usage, UserMessage
from agentrio.models import MessageAssembler, ModelRequest, OpenAIChat, ProviderError, TextDelta

from ..fake_openai import FakeRequest, Hang, HTTPError, start_fake_openai


async def _complete(model: OpenAIChat, prompt: str = "hi") -> AssistantMessage:
    assembler = MessageAssembler()
    async for event in model.stream(ModelRequest("", [UserMessage(prompt)])):
        assembler.feed(event)
    return assembler.message()


async def test_a_scripted_message_arrives_whole_through_the_real_adapter(nursery):
    message = AssistantMessage(
        [
            Text("Reading both files now."),
            ToolCall("c1", "read", {"path": "a.txt"}),
            ToolCall("c2", "ls", {}),
        ],
        usage=Usage(input_tokens=10, output_tokens=7, cache_read_tokens=3),
    )
    server = await start_fake_openai(nursery, [message], chunk_size=3)
    model = OpenAIChat("fake", base_url=server.base_url, api_key="k")
    received = await _complete(model)
    assert received.content == message.content
    assert received.stop_reason == "tool_use"
    assert received.usage == message.usage
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]
    assert server.requests[0].body["messages"][-1] == {"role": "user", "content": "hi"}
    assert server.requests[0].headers["authorization"] == "Bearer k"


async def test_a_callable_reply_sees_the_request(nursery):
    def echo(request: FakeRequest) -> AssistantMessage:
        return AssistantMessage([Text("you said " + request.body["messages"][-1]["content"])])

    server = await start_fake_openai(nursery, [echo])
    received = await _complete(OpenAIChat("fake", base_url=server.base_url, api_key="k"), "ping")
    assert received.text == "you said ping"
    assert received.stop_reason == "stop"


async def test_an_http_error_is_a_provider_error_and_an_empty_script_says_so(nursery):
    server = await start_fake_openai(nursery, [HTTPError(400, "bad request here")])
    model = OpenAIChat("fake", base_url=server.base_url, api_key="k")
    for expected in ("bad request here", "no reply left for request #2"):
        try:
            await _complete(model)
        except ProviderError as exc:
            assert expected in str(exc)
        else:
            raise AssertionError("no error")


async def test_a_hung_reply_streams_its_start_and_counts_the_client_leaving(nursery):
    server = await start_fake_openai(nursery, [Hang(AssistantMessage([Text("partial answer")]))])
    model = OpenAIChat("fake", base_url=server.base_url, api_key="k")
    seen: list[str] = []

    async def read() -> None:
        async for event in model.stream(ModelRequest("", [UserMessage("hi")])):
            if isinstance(event, TextDelta):
                seen.append(event.text)
            if "".join(seen) == "partial answer":
                scope.cancel()

    with trio.CancelScope() as scope:
        await read()
    assert "".join(seen) == "partial answer"
    with trio.fail_after(5):
        await server.wait_for(lambda: server.disconnects == 1)


async def _served(nursery, api: str, replies):
    """A fake server speaking ``api`` and the real adapter pointed at it."""
    from agentrio.models import Anthropic, OpenAIResponses

    from ..fake_anthropic import start_fake_anthropic

    if api == "anthropic":
        server = await start_fake_anthropic(nursery, replies, chunk_size=3)
        return server, Anthropic("fake", base_url=server.base_url, api_key="k", prompt_cache=False)
    server = await start_fake_openai(nursery, replies, chunk_size=3)
    return server, OpenAIResponses("fake", base_url=server.base_url, api_key="k")


@pytest.mark.parametrize("api, path", [("responses", "/v1/responses"), ("anthropic", "/v1/messages")])
async def test_the_responses_and_anthropic_streams_carry_a_message_whole_through_the_real_adapter(
    nursery, api, path
):
    message = AssistantMessage(
        [
            Text("Reading both files now."),
            ToolCall("c1", "read", {"path": "a.txt"}),
            ToolCall("c2", "ls", {}),
        ],
        usage=Usage(input_tokens=10, output_tokens=7, cache_read_tokens=3),
    )
    cut = AssistantMessage([Text("A long answ")], stop_reason="max_tokens")
    server, model = await _served(nursery, api, [message, cut, HTTPError(400, "bad request here")])
    received = await _complete(model)
    assert (received.content, received.stop_reason, received.usage) == (
        message.content,
        "tool_use",
        message.usage,
    )
    assert [r.path for r in server.requests] == [path]
    assert (await _complete(model)).stop_reason == "max_tokens"
    with pytest.raises(ProviderError, match="bad request here"):
        await _complete(model)
