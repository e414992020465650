"""Images and documents reach each provider in its own form: the exact JSON
the adapters send, as recorded by the loopback fake providers, for a user
message's parts and for a tool's image result."""

from __future__ import annotations

import base64

import pytest

from agentrio import AgentSpec, Document, Image, Runtime, UserMessage, tool
from agentrio.messages import AssistantMessage, Text, ToolCall

from ..fake_anthropic import start_fake_anthropic
from ..fake_openai import start_fake_openai

#: The smallest whole PNG: one transparent pixel.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"
PNG64 = base64.b64encode(PNG).decode()
PDF64 = base64.b64encode(PDF).decode()
PROMPT = UserMessage(
    [Text("What is in these?"), Image(PNG, "image/png"), Document(PDF, "application/pdf", "r.pdf")]
)


@tool
async def screenshot() -> Image:
    """Take a screenshot."""
    return Image(PNG, "image/png")


def replies() -> list[AssistantMessage]:
    return [AssistantMessage([ToolCall("c1", "screenshot", {})]), AssistantMessage([Text("A pixel.")])]


async def run(model, prompt) -> None:
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[screenshot], prompt_cache=False))
        result = await agent.run(prompt)
    assert result.stop_reason == "completed", result.error
    assert result.new_messages[2].content == [Image(PNG, "image/png")]


async def test_openai_chat_sends_data_uris_and_a_tools_image_in_a_user_message_after_the_tool_messages(
    nursery,
):
    from agentrio.models import OpenAIChat

    server = await start_fake_openai(nursery, replies())
    await run(OpenAIChat("fake", base_url=server.base_url, api_key="k"), PROMPT)
    first, second = (r.body["messages"] for r in server.requests)
    assert first == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
                {
                    "type": "file",
                    "file": {"filename": "r.pdf", "file_data": f"data:application/pdf;base64,{PDF64}"},
                },
            ],
        }
    ]
    assert second[2:] == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "[its images and documents follow in the next user message]",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "From the result of screenshot (c1):"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
            ],
        },
    ]


async def test_openai_responses_sends_input_image_and_input_file_and_a_tools_image_as_its_output(nursery):
    from agentrio.models import OpenAIResponses

    server = await start_fake_openai(nursery, replies())
    await run(OpenAIResponses("fake", base_url=server.base_url, api_key="k"), PROMPT)
    first, second = (r.body["input"] for r in server.requests)
    assert first == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in these?"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG64}"},
                {
                    "type": "input_file",
                    "filename": "r.pdf",
                    "file_data": f"data:application/pdf;base64,{PDF64}",
                },
            ],
        }
    ]
    assert second[2] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [{"type": "input_image", "image_url": f"data:image/png;base64,{PNG64}"}],
    }


async def test_anthropic_sends_image_and_document_blocks_and_a_tools_image_inside_its_tool_result(nursery):
    from agentrio.models import Anthropic

    server = await start_fake_anthropic(nursery, replies())
    await run(Anthropic("fake", base_url=server.base_url, api_key="k", prompt_cache=False), PROMPT)
    first, second = (r.body["messages"] for r in server.requests)
    assert first == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64},
                    "title": "r.pdf",
                },
            ],
        }
    ]
    assert second[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}}
                ],
            }
        ],
    }


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_a_text_document_goes_as_text_where_the_provider_wants_it(nursery, api):
    from agentrio.models import Anthropic, OpenAIChat, OpenAIResponses

    notes = Document(b"line one\n", "text/plain", "notes.txt")
    if api == "anthropic":
        server = await start_fake_anthropic(nursery, [AssistantMessage([Text("ok")])])
        model = Anthropic("fake", base_url=server.base_url, api_key="k", prompt_cache=False)
    else:
        server = await start_fake_openai(nursery, [AssistantMessage([Text("ok")])])
        adapter = OpenAIChat if api == "chat" else OpenAIResponses
        model = adapter("fake", base_url=server.base_url, api_key="k")
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model))
        await agent.run(UserMessage([notes]))
    body = server.requests[0].body
    sent = {
        "chat": lambda: body["messages"][0]["content"],
        "responses": lambda: body["input"][0]["content"],
        "anthropic": lambda: body["messages"][0]["content"],
    }[api]()
    expected = {
        "chat": [{"type": "text", "text": "[document notes.txt]\nline one\n"}],
        "responses": [{"type": "input_text", "text": "[document notes.txt]\nline one\n"}],
        "anthropic": [
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "line one\n"},
                "title": "notes.txt",
            }
        ],
    }[api]
    assert sent == expected


def test_openai_chat_gathers_the_images_of_parallel_calls_after_the_last_tool_message():
    from agentrio.messages import ToolResultMessage
    from agentrio.models import ModelRequest, OpenAIChat

    history = [
        UserMessage("Screenshots of both, please."),
        AssistantMessage([ToolCall("a", "shot", {}), ToolCall("b", "shot", {})]),
        ToolResultMessage("a", "shot", [Text("left"), Image(PNG, "image/png")]),
        ToolResultMessage("b", "shot", [Text("right")]),
    ]
    sent = OpenAIChat("m", api_key="k").request_body(ModelRequest("", history))["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert sent[2]["content"] == "left\n[its images and documents follow in the next user message]"
    assert sent[3]["content"] == "right"
    assert sent[4]["content"] == [
        {"type": "text", "text": "From the result of shot (a):"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
    ]
