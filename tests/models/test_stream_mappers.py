"""Stream mappers on hand-made events: quirks the recordings do not show."""

from __future__ import annotations

import json

from agentrio.models import Done, MessageAssembler
from agentrio.models.anthropic_stream import AnthropicStreamMapper
from agentrio.models.openai_chat_stream import ChatStreamMapper
from agentrio.models.openai_responses_stream import ResponsesStreamMapper
from agentrio.models.sse import ServerSentEvent


def assemble(mapper, *payloads, event="message"):
    assembler = MessageAssembler()
    for payload in payloads:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        for e in mapper.feed(ServerSentEvent(data, event)):
            assembler.feed(e)
    for e in mapper.finish():
        assembler.feed(e)
    return assembler.message()


def chunk(delta=None, finish=None, **extra):
    return {"model": "m", "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}], **extra}


def test_chat_reasoning_then_text_and_cached_usage():
    message = assemble(
        ChatStreamMapper("m", "openai"),
        chunk({"reasoning_content": "think"}),
        chunk({"content": "answer"}, "stop"),
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 60},
            },
        },
        "[DONE]",
    )
    assert [type(p).__name__ for p in message.content] == ["Thinking", "Text"]
    assert (message.usage.input_tokens, message.usage.cache_read_tokens, message.usage.output_tokens) == (
        40,
        60,
        5,
    )


def test_chat_tool_calls_without_index_and_stop_instead_of_tool_calls():
    message = assemble(
        ChatStreamMapper("m", "ollama"),
        chunk({"tool_calls": [{"id": "a", "function": {"name": "one", "arguments": '{"x":'}}]}),
        chunk({"tool_calls": [{"function": {"arguments": "1}"}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "two", "arguments": "{}"}}]}, "stop"),
        "[DONE]",
    )
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("a", "one", {"x": 1}),
        ("b", "two", {}),
    ]
    assert message.stop_reason == "tool_use"


def test_chat_truncated_arguments_are_kept_raw_and_not_a_tool_use():
    message = assemble(
        ChatStreamMapper("m", "openai"),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "a", "function": {"name": "one", "arguments": '{"x": "unterminated'}}
                ]
            },
            "length",
        ),
        "[DONE]",
    )
    assert message.stop_reason == "max_tokens"
    assert message.tool_calls[0].raw_arguments == '{"x": "unterminated'


def test_responses_summary_parts_and_whole_items():
    added = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"type": "reasoning", "id": "rs_1"},
    }
    summary = [
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "summary_index": i,
            "delta": text,
        }
        for i, text in [(0, "First."), (1, "Second.")]
    ]
    done = {
        "type": "response.output_item.done",
        "output_index": 0,
        "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc"},
    }
    # a server that sends a message and a call only as finished items
    message_done = {
        "type": "response.output_item.done",
        "output_index": 1,
        "item": {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]},
    }
    call_done = {
        "type": "response.output_item.done",
        "output_index": 2,
        "item": {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"a":1}'},
    }
    completed = {
        "type": "response.completed",
        "response": {
            "status": "completed",
            "usage": {"input_tokens": 10, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 4}},
        },
    }
    message = assemble(
        ResponsesStreamMapper("gpt", "openai-responses"),
        added,
        *summary,
        done,
        message_done,
        call_done,
        completed,
    )
    thought, text, call = message.content
    assert (thought.text, thought.signature, thought.id) == ("First.\n\nSecond.", "enc", "rs_1")
    assert text.text == "Hi" and (call.id, call.arguments) == ("c", {"a": 1})
    assert message.stop_reason == "tool_use" and (
        message.usage.input_tokens,
        message.usage.cache_read_tokens,
    ) == (6, 4)


def test_anthropic_cache_usage_and_refusal():
    start = {
        "type": "message_start",
        "message": {
            "model": "claude",
            "usage": {
                "input_tokens": 5,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 20,
                "output_tokens": 1,
            },
        },
    }
    delta = {"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {"output_tokens": 7}}
    message = assemble(AnthropicStreamMapper("claude", "anthropic"), start, delta, {"type": "message_stop"})
    assert (
        message.usage.input_tokens,
        message.usage.output_tokens,
        message.usage.cache_read_tokens,
        message.usage.cache_write_tokens,
    ) == (5, 7, 100, 20)
    assert message.stop_reason == "error"


def test_anthropic_unknown_stop_reason_is_a_stop():
    mapper = AnthropicStreamMapper("claude", "anthropic")
    mapper.feed(
        ServerSentEvent(json.dumps({"type": "message_delta", "delta": {"stop_reason": "something_new"}}))
    )
    mapper.feed(ServerSentEvent(json.dumps({"type": "message_stop"})))
    assert mapper.finish()[-1] == Done("stop")
