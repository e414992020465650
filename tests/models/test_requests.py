"""Request builders: history in, provider JSON out (no network)."""

from __future__ import annotations

from agentrio.messages import AssistantMessage, Text, Thinking, ToolCall, ToolResultMessage, UserMessage
from agentrio.models import Anthropic, ModelRequest, OpenAIChat, OpenAIResponses, ToolSpec

TOOL = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
ANTHROPIC_THOUGHT = Thinking("hmm", signature="sig-a")
REDACTED = Thinking("", signature="opaque", redacted=True)
REASONING = Thinking("summary", signature="enc", id="rs_1")


def history(provider: str, thinking: list) -> list:
    return [
        UserMessage("read a"),
        AssistantMessage(
            [*thinking, Text("Reading."), ToolCall("functions.read:0", "read", {"path": "a"})],
            provider=provider,
        ),
        ToolResultMessage("functions.read:0", "read", [Text("no such file")], is_error=True),
        UserMessage("and b?"),
    ]


def test_anthropic_replays_signed_and_redacted_thinking_to_anthropic_only():
    model = Anthropic("claude", api_key="k", thinking_budget=2048, prompt_cache=False)
    own = model.request_body(
        ModelRequest("sys", history("anthropic", [ANTHROPIC_THOUGHT, REDACTED, Thinking("unsigned")]), [TOOL])
    )
    assert own["messages"][1]["content"][:2] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig-a"},
        {"type": "redacted_thinking", "data": "opaque"},
    ]
    assert len(own["messages"][1]["content"]) == 4  # the unsigned thought is dropped
    assert own["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert own["system"] == "sys" and own["tools"][0]["input_schema"] == TOOL.parameters
    other = model.request_body(ModelRequest("", history("openai-responses", [REASONING])))
    assert [b["type"] for b in other["messages"][1]["content"]] == ["text", "tool_use"]


def test_anthropic_tool_results_and_the_next_user_words_share_one_user_message():
    body = Anthropic("claude", api_key="k", prompt_cache=False).request_body(
        ModelRequest("", history("anthropic", []))
    )
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "functions_read_0",
            "content": "no such file",
            "is_error": True,
        },
        {"type": "text", "text": "and b?"},
    ]
    # the call's id is mapped the same way as its result's
    assert body["messages"][1]["content"][1]["id"] == "functions_read_0"
    assert "system" not in body and body["max_tokens"] == 16384


def test_anthropic_marks_cache_breakpoints_after_tools_system_and_history():
    body = Anthropic("claude", api_key="k").request_body(
        ModelRequest("sys", history("anthropic", []), [TOOL, TOOL])
    )
    marked = {"type": "ephemeral"}
    assert [t.get("cache_control") for t in body["tools"]] == [None, marked]
    assert body["system"] == [{"type": "text", "text": "sys", "cache_control": marked}]
    last = body["messages"][-1]["content"]
    assert [b.get("cache_control") for b in last] == [None, marked]
    earlier = [b for m in body["messages"][:-1] for b in m["content"]]
    assert not any("cache_control" in b for b in earlier)


def test_anthropic_never_marks_a_thinking_block():
    prefill = AssistantMessage([Text("Sure:"), ANTHROPIC_THOUGHT], provider="anthropic")
    body = Anthropic("claude", api_key="k").request_body(ModelRequest("", [UserMessage("go"), prefill]))
    text, thought = body["messages"][-1]["content"]
    assert text["cache_control"] == {"type": "ephemeral"} and "cache_control" not in thought


def test_responses_replays_reasoning_items_to_itself_only():
    model = OpenAIResponses("gpt-5", api_key="k", reasoning_effort="low", max_tokens=500)
    body = model.request_body(
        ModelRequest(
            "sys", history("openai-responses", [REASONING, Thinking("no id", signature="x")]), [TOOL]
        )
    )
    assert body["input"] == [
        {"role": "user", "content": "read a"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "summary"}],
            "encrypted_content": "enc",
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
        {"type": "function_call", "call_id": "functions.read:0", "name": "read", "arguments": '{"path":"a"}'},
        {"type": "function_call_output", "call_id": "functions.read:0", "output": "no such file"},
        {"role": "user", "content": "and b?"},
    ]
    assert body["instructions"] == "sys" and body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "low"} and body["max_output_tokens"] == 500
    assert body["tools"] == [
        {
            "type": "function",
            "name": "read",
            "description": "Read a file.",
            "parameters": TOOL.parameters,
            "strict": False,
        }
    ]
    other = model.request_body(ModelRequest("", history("anthropic", [ANTHROPIC_THOUGHT])))
    assert not any(item.get("type") == "reasoning" for item in other["input"])
    assert "include" not in OpenAIResponses("gpt-5", api_key="k", store=True).request_body(
        ModelRequest("", [UserMessage("x")])
    )


def test_chat_messages_tools_and_options():
    model = OpenAIChat(
        "gpt-4.1",
        api_key="k",
        max_tokens=100,
        temperature=0.2,
        reasoning_effort="high",
        system_role="developer",
    )
    body = model.request_body(ModelRequest("sys", history("openai", [ANTHROPIC_THOUGHT]), [TOOL]))
    assert body["messages"] == [
        {"role": "developer", "content": "sys"},
        {"role": "user", "content": "read a"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "functions.read:0",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "functions.read:0", "content": "no such file"},
        {"role": "user", "content": "and b?"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read a file.", "parameters": TOOL.parameters},
        }
    ]
    assert (body["max_completion_tokens"], body["temperature"], body["reasoning_effort"]) == (
        100,
        0.2,
        "high",
    )
    assert body["stream_options"] == {"include_usage": True}
    legacy = OpenAIChat("llama", api_key="k", max_tokens=5, max_tokens_field="max_tokens").request_body(
        ModelRequest("", [UserMessage("x")])
    )
    assert legacy["max_tokens"] == 5 and "max_completion_tokens" not in legacy


def test_history_goes_through_the_tool_protocol_projection():
    messages = [
        UserMessage("go"),
        AssistantMessage([]),
        AssistantMessage([ToolCall("c1", "read", {})], provider="openai"),
        UserMessage("interrupting"),
    ]
    body = OpenAIChat("m", api_key="k").request_body(ModelRequest("", messages))
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "user"]
    assert body["messages"][2]["content"].startswith("TOOL_RESULT_MISSING")


def test_arguments_that_were_not_an_object_are_replayed_as_written():
    call = ToolCall("c1", "read", {}, raw_arguments='{"path": ')
    messages = [
        UserMessage("go"),
        AssistantMessage([call]),
        ToolResultMessage("c1", "read", [Text("bad arguments")], is_error=True),
    ]
    body = OpenAIChat("m", api_key="k").request_body(ModelRequest("", messages))
    assert body["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"path": '


def test_a_request_may_raise_the_output_budget_of_every_adapter():
    request = ModelRequest("", [UserMessage("x")], max_tokens=4000)
    assert Anthropic("claude", api_key="k").request_body(request)["max_tokens"] == 4000
    assert OpenAIChat("m", api_key="k", max_tokens=100).request_body(request)["max_completion_tokens"] == 4000
    assert OpenAIResponses("m", api_key="k").request_body(request)["max_output_tokens"] == 4000
    # Without one, each adapter's own budget holds.
    plain = ModelRequest("", [UserMessage("x")])
    assert OpenAIChat("m", api_key="k", max_tokens=100).request_body(plain)["max_completion_tokens"] == 100
