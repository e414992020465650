"""Every recorded provider interaction, served from a loopback server.

Responses: the adapter's result must be what the recording says (explicit
expected values below, read off each recording). Requests: for the history
a recorded request carries, our adapter must send the same shape.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from agentrio.messages import Text, Thinking, Usage
from agentrio.models import (
    Done,
    MessageAssembler,
    ProviderError,
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

from .loopback import Reply, split
from .recordings import RECORDINGS, adapter_for, recorded_request


@attrs.frozen
class Expect:
    stop: str | None = None
    usage: Usage = Usage()
    model: str = ""
    texts: tuple[str, ...] = ()
    calls: tuple[tuple[str, str, dict], ...] = ()
    #: (text, signature, redacted, id); a signature ending in "…" is a prefix.
    thinking: tuple[tuple[str, str, bool, str | None], ...] = ()
    #: (status, type, words of the message)
    error: tuple[int | None, str, str] | None = None


def replayed_signature(file: str, block_type: str) -> str:
    """The signature a follow-up recording sent back: the one its
    predecessor's stream must yield."""
    body = RECORDINGS[file]["request"]["body"]
    if block_type == "reasoning":
        return next(i["encrypted_content"] for i in body["input"] if i.get("type") == "reasoning")
    blocks = [b for m in body["messages"] if m["role"] == "assistant" for b in m["content"]]
    return next(b["signature"] for b in blocks if b["type"] == block_type)


EXPECTED: dict[str, Expect] = {
    "01": Expect(
        "tool_use",
        model="gpt-3.5-turbo-0125",
        calls=(
            ("call_cCPjAyfwTzboEKjVlqFrArNF", "get_current_weather", {"location": "San Francisco"}),
            ("call_Zi4He1Ns0mozwT6f85nW1BOW", "get_current_weather", {"location": "Boston"}),
        ),
    ),
    "02": Expect(
        "tool_use",
        Usage(364, 40),
        "gpt-4o-2024-08-06",
        calls=(
            ("call_q2UyBRP7eXNTzAoR8lEhjc9Z", "get_country", {}),
            ("call_b51ijcpFkDiTQG1bQzsrmtW5", "get_product_name", {}),
        ),
    ),
    "03": Expect(
        "tool_use",
        Usage(423, 15),
        "gpt-4o-2024-08-06",
        calls=(("call_LwxJUB9KppVyogRRLQsamRJv", "get_weather", {"city": "Mexico City"}),),
    ),
    "04": Expect(
        "tool_use",
        Usage(448, 62),
        "gpt-4o-2024-08-06",
        calls=(
            (
                "call_CCGIWaMeYWmxOQ91orkmTvzn",
                "final_result",
                {
                    "answers": [
                        {"label": "Capital", "answer": "The capital of Mexico is Mexico City."},
                        {"label": "Weather", "answer": "The weather in Mexico City is currently sunny."},
                        {"label": "Product Name", "answer": "The product name is Pydantic AI."},
                    ]
                },
            ),
        ),
    ),
    "05": Expect(
        "tool_use",
        Usage(54, 20),
        "gpt-4o-mini-2024-07-18",
        calls=(("call_1EYWDzueHEp8OsB8jJSEp7WB", "multiply", {"a": 1231, "b": 2331}),),
    ),
    "06": Expect(
        "stop",
        Usage(87, 26),
        "gpt-4o-mini-2024-07-18",
        texts=("The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\).",),
    ),
    "07": Expect("max_tokens", Usage(12, 100), "gpt-5-nano-2025-08-07"),
    "08": Expect(error=(404, "invalid_request_error", "`gpt-4.1-nano-wrong` does not exist")),
    # No finish_reason at all, and the tool-call header comes twice.
    "09": Expect("tool_use", Usage(57, 17), "moonshotai/kimi-k2", calls=(("0", "llm_version", {}),)),
    "10": Expect(error=(400, "provider_error", "Token limit reached")),
    "11": Expect(error=(400, "invalid_request_error", "Tool call validation failed")),
    "12": Expect(error=(429, "provider_error", "temporarily rate-limited upstream")),
    "13": Expect(
        "tool_use",
        Usage(255, 16),
        "gpt-4o-2024-08-06",
        calls=(("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", {"country": "France"}),),
    ),
    "14": Expect("stop", Usage(278, 9), "gpt-4o-2024-08-06", texts=("The capital of France is Paris.",)),
    "15": Expect(
        "tool_use",
        Usage(63, 69),
        "gpt-5.5-2026-04-23",
        texts=("I’ll check the capital lookup tool for “PotatoLand.”",),
        calls=(("call_LabG58Uhrq9kZvR52BYKjToD", "get_capital", {"country": "PotatoLand"}),),
        thinking=(
            (
                "",
                replayed_signature("16", "reasoning"),
                False,
                "rs_0fabc13af1ee0049006a691dfe60b081a1baa444d3cf19afba",
            ),
        ),
    ),
    "16": Expect(
        "stop", Usage(147, 16), "gpt-5.5-2026-04-23", texts=("The capital of PotatoLand is **Potato City**.",)
    ),
    "17": Expect(
        "tool_use",
        Usage(53, 469),
        "gpt-5-2025-08-07",
        calls=(("call_CWXgs68YprAjp6t0371hiPOI", "final_result", {"result": 6666}),),
        thinking=(
            (
                "",
                "gAAAAABoyXvxI6jwG5j6rvTGC7PD6JN…",
                False,
                "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405",
            ),
        ),
    ),
    "18": Expect(
        "tool_use",
        Usage(58, 23),
        "gpt-5.5-2026-04-23",
        calls=(("call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply", {"a": 1231, "b": 2331}),),
    ),
    "19": Expect("stop", Usage(94, 18), "gpt-5.5-2026-04-23", texts=("1231 × 2331 = **2,869,461**",)),
    "20": Expect(error=(400, "invalid_request_error", "Invalid 'temperature'")),
    "21": Expect(
        "tool_use",
        Usage(506, 153),
        "claude-3-5-sonnet-20240620",
        texts=(
            (
                "Certainly! I can help you with that information. To get the weather and current time in "
                "San Francisco, I'll need to use two separate functions. Let me fetch that data for you."
            ),
        ),
        calls=(
            (
                "toolu_014x5X91kx3fvdhpLvwXZWE2",
                "get_weather",
                {"location": "San Francisco, CA", "unit": "celsius"},
            ),
            ("toolu_0121kXsENLvoDZ72LCuAnCCz", "get_time", {"timezone": "America/Los_Angeles"}),
        ),
    ),
    "22": Expect(
        "tool_use",
        Usage(542, 62),
        "claude-haiku-4-5-20251001",
        calls=(
            ("toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", {}),
            ("toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", {}),
        ),
    ),
    "23": Expect(
        "stop",
        Usage(678, 82),
        "claude-haiku-4-5-20251001",
        texts=(
            (
                "Here are two great names for your pet pelican:\n\n1. **Charles** - A sophisticated and "
                "dignified name, perfect for a pelican with personality!\n2. **Sammy** - A friendly and "
                "playful name that gives off warm, approachable vibes.\n\nEither of these would make an "
                "excellent name for your feathered friend! 🦅"
            ),
        ),
    ),
    "24": Expect(
        "tool_use",
        Usage(598, 92),
        "claude-haiku-4-5-20251001",
        calls=(("toolu_01825dXWLSoJwCst1qTsiWdb", "fixed_version", {}),),
        thinking=(
            (
                (
                    "The user wants me to:\n1. Use the fixed_version tool\n2. Tell them the version\n3. Make a "
                    "short joke about it\n\nLet me first call the fixed_version tool to see what version it returns."
                ),
                replayed_signature("25", "thinking"),
                False,
                None,
            ),
        ),
    ),
    "25": Expect(
        "stop",
        Usage(707, 89),
        "claude-haiku-4-5-20251001",
        texts=(
            (
                "The version is **0.32a0**.\n\nHere's a joke about it: \n\nLooks like this version is still in "
                'alpha testing... I guess you could say it\'s going through a "0.32a good time" before becoming '
                "stable! 😄\n\n(It's at version 0.32a, which means it's far from 1.0, so plenty of room to grow!)"
            ),
        ),
    ),
    # The server tool and its result are Anthropic's business: only text and
    # the client tool call remain.
    "26": Expect(
        "tool_use",
        Usage(1591, 175),
        "claude-sonnet-4-6",
        texts=(
            "Let me search for a tool that can provide current exchange rate information.",
            "I found the right tool! Let me fetch the current USD to EUR exchange rate for you.",
        ),
        calls=(
            (
                "toolu_01EFn5wTNBYA8Reni8rbmnHT",
                "get_exchange_rate",
                {"from_currency": "USD", "to_currency": "EUR"},
            ),
        ),
    ),
    "27": Expect(
        "stop",
        Usage(92, 189),
        "claude-sonnet-4-5-20250929",
        texts=(
            (
                "I notice that you've sent what appears to be some kind of test string or command. I don't have "
                'any special "magic string" triggers or backdoor commands that would expose internal systems or '
                "change my behavior.\n\nI'm Claude, an AI assistant created by Anthropic to be helpful, harmless, "
                "and honest. How can I assist you today with a legitimate task or question?"
            ),
        ),
        thinking=(
            ("", "EqkECkYIBxgCKkA8AZ4noDfV5VcOJe…", True, None),
            ("", "EtgBCkYIBxgCKkDQfGkwzflEJP5a…", True, None),
        ),
    ),
    "28": Expect(
        "stop",
        Usage(16, 28),
        "claude-haiku-4-5-20251001",
        texts=(
            '\ndef pelican():\n    return "A large waterbird with a long bill and a throat pouch for catching fish."\n',
        ),
    ),
    "29": Expect(error=(400, "invalid_request_error", "does not support effort level 'xhigh'")),
}


def test_every_recording_has_expectations():
    assert sorted(RECORDINGS) == sorted(EXPECTED) and len(RECORDINGS) == 29


_STARTS = {TextStart: TextEnd, ThinkingStart: ThinkingEnd, ToolCallStart: ToolCallEnd}
_DELTAS = {TextDelta: TextStart, ThinkingDelta: ThinkingStart, ToolCallDelta: ToolCallStart}


def assert_well_formed(events: list) -> None:
    """StreamStart first, Done last, blocks numbered in order of their
    start, every delta and end inside its own open block of the right kind."""
    assert isinstance(events[0], StreamStart) and isinstance(events[-1], Done)
    assert not any(isinstance(e, (StreamStart, Done)) for e in events[1:-1])
    open_blocks: dict[int, type] = {}
    started = 0
    for event in events[1:-1]:
        if type(event) in _STARTS:
            assert event.index == started
            started += 1
            open_blocks[event.index] = type(event)
        elif type(event) in _DELTAS:
            assert open_blocks[event.index] is _DELTAS[type(event)]
        else:
            assert _STARTS[open_blocks.pop(event.index)] is type(event)
    assert not open_blocks


def serve(server, recording: dict[str, Any], chunk_size: int) -> None:
    response = recording["response"]
    body = response["body"].encode()
    server.reply(Reply(response["status"], response["headers"]["content-type"], split(body, chunk_size)))


@pytest.mark.parametrize("chunk_size", [1 << 20, 7])
@pytest.mark.parametrize("file", sorted(EXPECTED))
async def test_recorded_response(file, chunk_size, server, http_client):
    recording, expected = RECORDINGS[file], EXPECTED[file]
    serve(server, recording, chunk_size)
    request, options = recorded_request(recording)
    adapter = adapter_for(recording, base_url=server.url, http_client=http_client, **options)
    events = []
    if expected.error is not None:
        with pytest.raises(ProviderError) as caught:
            async for event in adapter.stream(request):
                events.append(event)
        status, kind, words = expected.error
        assert (caught.value.status, caught.value.type) == (status, kind)
        assert words in caught.value.message
        return
    async for event in adapter.stream(request):
        events.append(event)
    assert_well_formed(events)
    assembler = MessageAssembler()
    for event in events:
        assembler.feed(event)
    message = assembler.message()
    assert (message.stop_reason, message.usage, message.model) == (
        expected.stop,
        expected.usage,
        expected.model,
    )
    assert message.provider == adapter.provider
    assert tuple(p.text for p in message.content if isinstance(p, Text)) == expected.texts
    assert tuple((c.id, c.name, c.arguments) for c in message.tool_calls) == expected.calls
    assert all(c.raw_arguments is None for c in message.tool_calls)
    thinking = [p for p in message.content if isinstance(p, Thinking)]
    assert len(thinking) == len(expected.thinking)
    for part, (text, signature, redacted, item_id) in zip(thinking, expected.thinking):
        assert (part.text, part.redacted, part.id) == (text, redacted, item_id)
        if signature.endswith("…"):
            assert part.signature.startswith(signature[:-1]) and len(part.signature) > 100
        else:
            assert part.signature == signature


# --- requests -----------------------------------------------------------------


def _arguments(raw: str) -> Any:
    return json.loads(raw or "{}")


def chat_shape(body: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for m in body["messages"]:
        calls = [
            (c["id"], c["function"]["name"], _arguments(c["function"]["arguments"]))
            for c in m.get("tool_calls") or ()
        ]
        if m["role"] == "assistant" and not m.get("content") and not calls:
            continue  # an empty assistant message says nothing (file 06 sends one)
        messages.append((m["role"], m.get("content") or "", calls, m.get("tool_call_id")))
    tools = [
        (t["function"]["name"], t["function"].get("description") or "", t["function"]["parameters"])
        for t in body.get("tools") or ()
    ]
    options = {
        k: body.get(k)
        for k in ("model", "stream", "temperature", "max_completion_tokens", "reasoning_effort")
    }
    return {"messages": messages, "tools": tools, **options}


def responses_shape(body: dict[str, Any]) -> dict[str, Any]:
    items = []
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "message":
            content = item["content"]
            text = content if isinstance(content, str) else "".join(c["text"] for c in content)
            items.append((item["role"], text))
        elif kind == "reasoning":
            items.append(
                ("reasoning", item["id"], item["encrypted_content"], [s["text"] for s in item["summary"]])
            )
        elif kind == "function_call":
            items.append(("function_call", item["call_id"], item["name"], _arguments(item["arguments"])))
        else:
            items.append((kind, item["call_id"], item["output"]))
    tools = [(t["name"], t.get("description") or "", t["parameters"]) for t in body.get("tools") or ()]
    options = {k: body.get(k) for k in ("model", "stream", "temperature", "max_output_tokens")}
    effort = (body.get("reasoning") or {}).get("effort")
    return {
        "input": items,
        "tools": tools,
        "instructions": body.get("instructions") or "",
        "effort": effort,
        **options,
    }


def _uncached(block: dict[str, Any]) -> tuple:
    """A block without its prompt-cache marker: caching is not content."""
    return tuple(sorted((k, v) for k, v in block.items() if k != "cache_control"))


def anthropic_shape(body: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for m in body["messages"]:
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        messages.append((m["role"], [_uncached(b) for b in blocks]))
    tools = [
        (t["name"], t.get("description") or "", t["input_schema"])
        for t in body.get("tools") or ()
        if "input_schema" in t
    ]
    budget = (body.get("thinking") or {}).get("budget_tokens")
    system = body.get("system")
    if isinstance(system, list):
        system = "".join(block["text"] for block in system)
    options = {k: body.get(k) for k in ("model", "stream", "temperature", "max_tokens")}
    return {"messages": messages, "tools": tools, "thinking_budget": budget, "system": system, **options}


SHAPES = {"openai-chat": chat_shape, "openai-responses": responses_shape, "anthropic": anthropic_shape}


@pytest.mark.parametrize("file", sorted(RECORDINGS))
async def test_recorded_request_shape(file, server, http_client):
    """Sent over the wire, for the history the recorded request carries."""
    recording = RECORDINGS[file]
    server.reply(Reply(500, "application/json", [b'{"error": {"message": "only the request matters"}}']))
    request, options = recorded_request(recording)
    adapter = adapter_for(recording, base_url=server.url, http_client=http_client, **options)
    with pytest.raises(ProviderError):
        async for _ in adapter.stream(request):
            pass
    (sent,) = server.requests
    recorded_url = recording["request"]["url"].split("?")[0]
    assert recorded_url.endswith(sent.path)
    shape = SHAPES[recording["provider"]]
    recorded_body = recording["request"]["body"]
    if recording["provider"] == "anthropic":
        assert sent.headers["anthropic-version"] == "2023-06-01"
    assert shape(sent.json()) == shape({**recorded_body, "stream": True})
