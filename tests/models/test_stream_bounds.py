"""What a broken or hostile server can make an adapter hold, and for how long."""

from __future__ import annotations

import pytest
import trio

from agentrio.messages import Usage
from agentrio.models import Done, OpenAIChat, ProviderError, TextDelta
from agentrio.models.retry import is_retryable

from .loopback import Reply, split
from .test_transport import ANTHROPIC_END, ANTHROPIC_START, REQUEST, anthropic


def chat(server, **options) -> OpenAIChat:
    return OpenAIChat("m", base_url=server.url, api_key="k", **options)


async def test_a_line_past_the_adapters_limit_ends_the_stream_as_an_invalid_response(server):
    model = anthropic(server, max_event_bytes=64 * 1024)
    server.reply(Reply(chunks=split(b"data: " + b"x" * 2**20, 4096), hang=True))
    with pytest.raises(ProviderError) as raised:
        async for _ in model.stream(REQUEST):
            pass
    assert raised.value.type == "invalid_response"
    assert "longer than 65536 bytes" in raised.value.message


async def _fails_with(model):
    events = []
    with pytest.raises(ProviderError) as raised:
        async for event in model.stream(REQUEST):
            events.append(event)
    return raised.value, events


async def test_keep_alive_comments_do_not_hold_a_stalled_stream_open(server, autojump_clock):
    model = anthropic(server, idle_timeout=30)
    server.reply(Reply(chunks=[ANTHROPIC_START], repeat=b": keep-alive\n\n", every=1.0))
    start = trio.current_time()
    error, events = await _fails_with(model)
    assert (error.type, error.message) == ("timeout", "no event for 30 s")
    assert is_retryable(error)
    assert [type(e).__name__ for e in events] == ["StreamStart", "TextStart", "TextDelta"]
    assert trio.current_time() - start == pytest.approx(30, abs=1.5)


async def test_a_trickle_that_never_completes_an_event_is_idle(server, autojump_clock):
    model = anthropic(server, idle_timeout=30)
    server.reply(Reply(chunks=[ANTHROPIC_START, b"data: {"], repeat=b" ", every=1.0))
    error, _ = await _fails_with(model)
    assert (error.type, error.message) == ("timeout", "no event for 30 s")


async def test_events_restart_the_idle_clock(server, autojump_clock):
    model = anthropic(server, idle_timeout=30)
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    # 20 s between reads, 140 s in all: never 30 s without an event
    server.reply(Reply(chunks=[ANTHROPIC_START, *[ping] * 5, ANTHROPIC_END], pause=20.0))
    start = trio.current_time()
    events = [event async for event in model.stream(REQUEST)]
    assert events[-1] == Done("stop", Usage(3, 2))
    assert trio.current_time() - start == pytest.approx(140, abs=1.5)


async def test_an_attempt_ends_at_its_deadline_however_lively_the_stream(server, autojump_clock):
    model = chat(server, attempt_timeout=100)
    delta = b'data: {"choices": [{"index": 0, "delta": {"content": "x"}}]}\n\n'
    server.reply(Reply(repeat=delta, every=1.0))
    start = trio.current_time()
    error, events = await _fails_with(model)
    assert (error.type, error.message) == ("timeout", "the answer took longer than 100 s")
    assert is_retryable(error)
    assert len([e for e in events if isinstance(e, TextDelta)]) == pytest.approx(100, abs=2)
    assert trio.current_time() - start == pytest.approx(100, abs=1.5)


async def test_the_deadline_covers_the_wait_for_the_response_headers(server, autojump_clock):
    model = chat(server, attempt_timeout=50)
    server.reply(Reply(headers_after=1000.0))
    error, _ = await _fails_with(model)
    assert (error.type, error.message) == ("timeout", "the answer took longer than 50 s")


def test_timeouts_must_be_positive_or_none():
    with pytest.raises(ValueError, match="idle_timeout must be a positive number of seconds or None, got 0"):
        OpenAIChat("m", idle_timeout=0)
    assert OpenAIChat("m", idle_timeout=None, attempt_timeout=None).idle_timeout is None
