"""A fake Anthropic Messages API on 127.0.0.1, for tests: the server of
``tests/fake_openai.py`` (same replies, records and ``wait_for``) speaking
Anthropic's stream, as the recorded streams of tests/conformance go.

An ``AssistantMessage`` reply streams as ``message_start`` (with the input
and cache token counts), then one content block per part — a ``text`` block
whose text comes in ``text_delta`` pieces of ``chunk_size`` characters (a
``ping`` after the first block starts), a ``tool_use`` block whose input
comes in ``input_json_delta`` fragments — then ``message_delta`` with the
stop reason (``end_turn``, ``tool_use``, ``max_tokens``) and the output
tokens, and ``message_stop``. A typed answer is a call to the answer tool:
``AssistantMessage([ToolCall("toolu_1", OUTPUT_TOOL, {...})])``.

Use it from a trio test::

    server = await start_fake_anthropic(nursery, [reply, ...])
    model = Anthropic("fake", base_url=server.base_url, api_key="k")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import trio

from agentrio.messages import AssistantMessage, Text, ToolCall

from .fake_openai import FakeReply, FakeServer, Wire, pieces, sse_event, start_fake_server

__all__ = ["ANTHROPIC", "start_fake_anthropic"]

_STOP_REASONS = {"stop": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _event(kind: str, **payload: Any) -> bytes:
    return sse_event({"type": kind, **payload}, kind)


def anthropic_events(message: AssistantMessage, chunk_size: int = 4, model: str = "fake") -> Iterator[bytes]:
    """The events Anthropic streams for ``message``, up to (not including) ``message_delta``."""
    usage = message.usage
    yield _event(
        "message_start",
        message={
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_write_tokens,
                "cache_read_input_tokens": usage.cache_read_tokens,
                "output_tokens": 1,
            },
        },
    )
    blocks = [part for part in message.content if isinstance(part, Text | ToolCall)]
    for index, part in enumerate(blocks):
        if isinstance(part, Text):
            yield _event("content_block_start", index=index, content_block={"type": "text", "text": ""})
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces(part.text, chunk_size)]
        else:
            block = {"type": "tool_use", "id": part.id, "name": part.name, "input": {}}
            yield _event("content_block_start", index=index, content_block=block)
            fragments = ["", *pieces(json.dumps(part.arguments), chunk_size)]
            deltas = [{"type": "input_json_delta", "partial_json": fragment} for fragment in fragments]
        if index == 0:
            yield _event("ping")
        for delta in deltas:
            yield _event("content_block_delta", index=index, delta=delta)
        yield _event("content_block_stop", index=index)


def anthropic_finish(message: AssistantMessage, model: str = "fake") -> list[bytes]:
    stop = {"stop_reason": _STOP_REASONS.get(message.stop_reason, "end_turn"), "stop_sequence": None}
    return [
        _event("message_delta", delta=stop, usage={"output_tokens": message.usage.output_tokens}),
        _event("message_stop"),
    ]


def anthropic_error(status: int, message: str) -> dict:
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


ANTHROPIC = Wire("/messages", anthropic_events, anthropic_finish, anthropic_error)


async def start_fake_anthropic(
    nursery: trio.Nursery, replies: Iterable[FakeReply] = (), *, chunk_size: int = 4
) -> FakeServer:
    """A fake Anthropic at ``base_url`` ``http://127.0.0.1:PORT`` (the adapter adds ``/v1/messages``)."""
    return await start_fake_server(nursery, (ANTHROPIC,), replies, chunk_size=chunk_size)
