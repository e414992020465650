"""Whatever bytes a server sends, an adapter's stream ends with a message or
a ProviderError: never another exception, never a hang.

Streams are the recorded streams of each provider, mutated (a value
replaced by random JSON made of the provider's own names, a field deleted,
events dropped, repeated, swapped or cut short), salted with invalid UTF-8,
lines past the size limit and JSON too deep to parse, framed with random
line ends, split at random, and served over loopback HTTP to the real
adapter.
"""

from __future__ import annotations

import json

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrio.messages import Message, converter
from agentrio.models import Anthropic, MessageAssembler, OpenAIChat, OpenAIResponses, ProviderError
from agentrio.models.sse import SSEDecoder

from .loopback import Reply, start_server
from .recordings import RECORDINGS
from .test_transport import REQUEST

LIMIT = 4096  # max_event_bytes of the adapters under test: giant lines stay cheap

# Each provider's field names and type names: random JSON made of them
# reaches past a mapper's first checks.
_WORDS = {
    "chat": [
        "stop",
        "tool_calls",
        "length",
        "choices",
        "delta",
        "content",
        "reasoning_content",
        "reasoning",
        "tool_calls",
        "index",
        "id",
        "function",
        "name",
        "arguments",
        "finish_reason",
        "usage",
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details",
        "cached_tokens",
        "model",
        "error",
        "message",
    ],
    "responses": [
        "type",
        "output_index",
        "content_index",
        "summary_index",
        "delta",
        "item",
        "id",
        "call_id",
        "name",
        "arguments",
        "content",
        "text",
        "refusal",
        "summary",
        "encrypted_content",
        "response",
        "status",
        "usage",
        "input_tokens",
        "output_tokens",
        "incomplete_details",
        "reason",
        "model",
        "error",
        "message",
        "code",
        "response.created",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "reasoning",
        "function_call",
        "output_text",
        "completed",
        "incomplete",
    ],
    "anthropic": [
        "type",
        "index",
        "delta",
        "text",
        "partial_json",
        "thinking",
        "signature",
        "content_block",
        "id",
        "name",
        "input",
        "data",
        "message",
        "model",
        "usage",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "stop_reason",
        "error",
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "tool_use",
        "redacted_thinking",
        "text_delta",
        "input_json_delta",
        "thinking_delta",
        "signature_delta",
        "end_turn",
        "max_tokens",
    ],
}
_SMALL_INTS = st.integers(-1, 3)


def _json(provider):
    words = _WORDS[provider]
    scalars = (
        st.none()
        | st.booleans()
        | _SMALL_INTS
        | st.integers()
        | st.floats(allow_nan=False)
        | st.sampled_from(words)
        | st.text(max_size=8)
        | st.just("[DONE]")
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(words), inner, max_size=5)
        ),
        max_leaves=15,
    )


def _seeds(provider):
    """The recorded successful streams of ``provider``, as (event, data) pairs."""
    seeds = []
    for recording in RECORDINGS.values():
        if _PROVIDERS.get(recording["provider"]) != provider or recording["response"]["status"] != 200:
            continue
        decoder = SSEDecoder()
        body = recording["response"]["body"].encode()
        seeds.append([(e.event, e.data) for e in decoder.feed(body) + decoder.close()])
    return seeds


_PROVIDERS = {
    "openai-chat": "chat",
    "openai-compat-openrouter": "chat",
    "openai-compat-groq": "chat",
    "openai-responses": "responses",
    "anthropic": "anthropic",
}
_GARBAGE = st.one_of(
    st.binary(max_size=12),  # invalid UTF-8, stray CR and LF, NULs
    st.integers(LIMIT // 2, LIMIT * 2).map(lambda n: b"data: " + b"x" * n),  # giant lines
    st.sampled_from(
        [b": keep-alive", b"data: [DONE]", b"data: {", b"data: NaN", b"event: error", b"retry: 1"]
    ),
    st.just(b"data: " + b"[" * 5000 + b"]" * 5000),  # nesting too deep to parse
)


@st.composite
def _replace(draw, value, replacement):
    """``value`` with one node (maybe the root) replaced or, in an object, deleted."""
    if not isinstance(value, (dict, list)) or not value or draw(st.integers(0, 3)) == 0:
        return draw(replacement)
    if isinstance(value, dict):
        key = draw(st.sampled_from(sorted(value)))
        copy = dict(value)
        if draw(st.booleans()) and draw(st.booleans()):
            del copy[key]
        else:
            copy[key] = draw(_replace(copy[key], replacement))
        return copy
    i = draw(st.integers(0, len(value) - 1))
    return [*value[:i], draw(_replace(value[i], replacement)), *value[i + 1 :]]


@st.composite
def streams(draw, provider):
    """A recorded stream, mutated a few times, framed and split at random."""
    events = list(draw(st.sampled_from(_seeds(provider))))
    lines: list[bytes | None] = []
    for _ in range(draw(st.integers(0, 4))):
        if not events:
            break
        i = draw(st.integers(0, len(events) - 1))
        match draw(st.sampled_from(["value", "value", "drop", "repeat", "swap", "truncate"])):
            case "value":
                name, data = events[i]
                try:
                    payload = json.loads(data)
                except ValueError:
                    continue
                events[i] = (name, json.dumps(draw(_replace(payload, _json(provider)))))
            case "drop":
                del events[i]
            case "repeat":
                events.insert(i, events[i])
            case "swap":
                j = draw(st.integers(0, len(events) - 1))
                events[i], events[j] = events[j], events[i]
            case "truncate":
                del events[i:]
    for name, data in events:
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(_GARBAGE))
        if name != "message":
            lines.append(b"event: " + name.encode())
        lines += [b"data: " + line.encode() for line in data.split("\n")] + [b""]
    end = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    body = b"".join(line + end for line in lines)
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=6)))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]


def _adapter(provider, url):
    options = {
        "base_url": url,
        "api_key": "k",
        "max_event_bytes": LIMIT,
        "idle_timeout": 5,
        "attempt_timeout": 10,
    }
    return {"chat": OpenAIChat, "responses": OpenAIResponses, "anthropic": Anthropic}[provider](
        "m", **options
    )


async def _outcome(model) -> str:
    """A stream's end as the agent would see it: a settled message or a
    provider error; any other exception fails the test."""
    assembler = MessageAssembler()
    try:
        async for event in model.stream(REQUEST):
            assembler.feed(event)
    except ProviderError:
        message = assembler.interrupted("error")
        outcome = "error"
    else:
        message = assembler.message()
        outcome = message.stop_reason
    # What the agent journals must read back as it was.
    assert converter.structure(json.loads(json.dumps(converter.unstructure(message))), Message) == message
    return outcome


async def _serve_one(provider, chunks) -> str:
    async with trio.open_nursery() as nursery:
        server = await start_server(nursery)
        server.reply(Reply(chunks=chunks))
        with trio.fail_after(10):  # a hang fails, it does not block the suite
            outcome = await _outcome(_adapter(provider, server.url))
        nursery.cancel_scope.cancel()
    return outcome


@pytest.mark.parametrize("provider", ["chat", "responses", "anthropic"])
def test_any_byte_stream_ends_in_a_message_or_a_provider_error(provider):
    outcomes = []

    @settings(max_examples=50, deadline=None)
    @given(streams(provider))
    def check(chunks):
        outcomes.append(trio.run(_serve_one, provider, chunks))

    check()
    # The mutations reach past the first event: both ends are met.
    assert "error" in outcomes and len(set(outcomes)) > 1
