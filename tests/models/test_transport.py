"""The adapters over real HTTP: errors, dropped connections, cancellation,
client sharing, headers."""

from __future__ import annotations

import json

import httpx
import pytest
import trio

from agentrio.messages import UserMessage
from agentrio.models import (
    Anthropic,
    ModelRequest,
    OpenAIChat,
    OpenAIResponses,
    ProviderError,
    TextDelta,
    open_http_client,
    shared_http_client,
)
from agentrio.models.retry import is_retryable

from .loopback import Reply

REQUEST = ModelRequest("Be brief.", [UserMessage("hi")])


def sse(*events: tuple[str | None, dict]) -> bytes:
    out = b""
    for name, payload in events:
        if name:
            out += f"event: {name}\n".encode()
        out += f"data: {json.dumps(payload)}\n\n".encode()
    return out


ANTHROPIC_START = sse(
    (
        "message_start",
        {"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 3}}},
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
    ),
)
ANTHROPIC_END = sse(
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    ),
    ("message_stop", {"type": "message_stop"}),
)


def anthropic(server, client=None, **options) -> Anthropic:
    return Anthropic("claude", base_url=server.url, api_key="test-key", http_client=client, **options)


async def collect(model, request=REQUEST) -> list:
    return [event async for event in model.stream(request)]


async def failure(model, request=REQUEST) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await collect(model, request)
    return caught.value


def json_reply(status: int, payload: dict, headers=()) -> Reply:
    return Reply(status, "application/json", [json.dumps(payload).encode()], list(headers))


async def test_404_is_final(server):
    server.reply(
        json_reply(
            404,
            {
                "error": {
                    "message": "no such model",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
        )
    )
    error = await failure(OpenAIChat("nope", base_url=server.url))
    assert (error.status, error.type, error.message) == (404, "invalid_request_error", "no such model")
    assert not is_retryable(error)


async def test_429_carries_retry_after(server):
    server.reply(
        json_reply(429, {"error": {"message": "slow down", "type": "requests"}}, [("retry-after", "7")])
    )
    error = await failure(OpenAIChat("m", base_url=server.url))
    assert (error.status, error.retry_after) == (429, 7.0)
    assert is_retryable(error)


async def test_400_invalid_request(server):
    server.reply(
        json_reply(
            400,
            {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too big"}},
        )
    )
    error = await failure(anthropic(server))
    assert (error.status, error.type) == (400, "invalid_request_error")
    assert not is_retryable(error)


async def test_529_overloaded(server):
    server.reply(
        json_reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    )
    error = await failure(anthropic(server))
    assert (error.status, error.type) == (529, "overloaded_error")
    assert is_retryable(error)


async def test_context_overflow_over_http(server):
    server.reply(
        json_reply(
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 210000 tokens > 200000 maximum",
                },
            },
        )
    )
    error = await failure(anthropic(server))
    assert (error.status, error.type) == (400, "context_overflow")
    assert not is_retryable(error)


async def test_overloaded_event_mid_stream_after_content(server):
    server.reply(
        Reply(
            chunks=[
                ANTHROPIC_START,
                sse(
                    (
                        "error",
                        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                    )
                ),
            ]
        )
    )
    events = []
    with pytest.raises(ProviderError) as caught:
        async for event in anthropic(server).stream(REQUEST):
            events.append(event)
    assert TextDelta(0, "Hel") in events  # content came first: the loop must withdraw it
    assert (caught.value.status, caught.value.type) == (None, "overloaded_error")
    assert is_retryable(caught.value)


async def test_responses_failed_with_context_overflow(server):
    failed = {
        "type": "response.failed",
        "response": {
            "status": "failed",
            "error": {
                "code": "context_length_exceeded",
                "message": "Your input exceeds the context window of this model.",
            },
        },
    }
    server.reply(
        Reply(
            chunks=[
                sse(
                    ("response.created", {"type": "response.created", "response": {"model": "gpt"}}),
                    ("response.failed", failed),
                )
            ]
        )
    )
    error = await failure(OpenAIResponses("gpt", base_url=server.url))
    assert error.type == "context_overflow"


async def test_responses_error_event(server):
    server.reply(
        Reply(
            chunks=[
                sse(
                    ("error", {"type": "error", "code": "server_error", "message": "The server had an error"})
                )
            ]
        )
    )
    error = await failure(OpenAIResponses("gpt", base_url=server.url))
    assert "server had an error" in error.message


async def test_responses_incomplete_is_max_tokens(server):
    incomplete = {
        "type": "response.incomplete",
        "response": {
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {"input_tokens": 5, "output_tokens": 9},
        },
    }
    server.reply(
        Reply(
            chunks=[
                sse(
                    ("response.created", {"type": "response.created", "response": {"model": "gpt"}}),
                    ("response.incomplete", incomplete),
                )
            ]
        )
    )
    events = await collect(OpenAIResponses("gpt", base_url=server.url))
    assert events[-1].stop_reason == "max_tokens" and events[-1].usage.output_tokens == 9


async def test_anthropic_context_window_stop_reason(server):
    end = sse(
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "model_context_window_exceeded"}, "usage": {}},
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    server.reply(Reply(chunks=[ANTHROPIC_START, end]))
    events = await collect(anthropic(server))
    assert events[-1].stop_reason == "context_overflow"


async def test_connection_dropped_mid_stream(server):
    server.reply(Reply(chunks=[ANTHROPIC_START], drop=True))
    error = await failure(anthropic(server))
    assert error.type == "connection_error" and is_retryable(error)


async def test_body_ending_before_the_final_event(server):
    server.reply(Reply(chunks=[ANTHROPIC_START]))
    error = await failure(anthropic(server))
    assert error.type == "connection_error" and "message_stop" in error.message


async def test_chat_body_ending_without_finish_or_done(server):
    chunk = {"model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]}
    server.reply(Reply(chunks=[sse((None, chunk))]))
    error = await failure(OpenAIChat("m", base_url=server.url))
    assert error.type == "connection_error"


async def test_unreachable_server():
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, lambda stream: stream.aclose(), 0)
        port = listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()
    # The listener is closed: nothing answers on that port now.
    error = await failure(OpenAIChat("m", base_url=f"http://127.0.0.1:{port}"))
    assert error.type == "connection_error" and is_retryable(error)


async def test_json_error_with_status_200(server):
    server.reply(json_reply(200, {"error": {"message": "model is loading", "type": "server_error"}}))
    error = await failure(OpenAIChat("m", base_url=server.url))
    assert (error.type, error.message) == ("server_error", "model is loading")


async def test_malformed_events_are_invalid_responses(server):
    server.reply(Reply(chunks=[b"data: {not json\n\n"]))
    assert (await failure(OpenAIChat("m", base_url=server.url))).type == "invalid_response"
    server.reply(Reply(chunks=[sse(("content_block_delta", {"type": "content_block_delta"}))]))
    assert (await failure(anthropic(server))).type == "invalid_response"


async def test_headers_and_extra_body(server):
    server.reply(Reply(chunks=[ANTHROPIC_START, ANTHROPIC_END]))
    await collect(anthropic(server, extra_headers={"anthropic-beta": "x"}, extra_body={"top_k": 5}))
    server.reply(json_reply(500, {}))
    await failure(OpenAIChat("m", base_url=server.url + "/v1/", api_key="sk-test"))
    server.reply(json_reply(500, {}))
    await failure(OpenAIChat("m", base_url=server.url, api_key=None))
    first, second, third = server.requests
    assert first.path == "/v1/messages"
    assert (first.headers["x-api-key"], first.headers["anthropic-beta"]) == ("test-key", "x")
    assert first.headers["accept"] == "text/event-stream"
    assert first.json()["top_k"] == 5 and first.json()["stream"] is True
    assert second.path == "/v1/chat/completions"
    assert second.headers["authorization"] == "Bearer sk-test"
    assert "authorization" not in third.headers


async def test_api_keys_default_to_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env-too")
    assert OpenAIChat("m").api_key == OpenAIResponses("m").api_key == "from-env"
    assert Anthropic("m").api_key == "from-env-too"
    assert "from-env" not in repr(OpenAIChat("m"))


async def test_thinking_budget_must_fit_in_max_tokens():
    with pytest.raises(ValueError, match="thinking_budget"):
        Anthropic("m", api_key="k", max_tokens=1000, thinking_budget=1000)


# --- the client each request uses -------------------------------------------------


async def test_shared_client_is_published_and_closed():
    assert shared_http_client.get() is None
    async with open_http_client(max_connections=3) as shared:
        assert shared_http_client.get() is shared
        assert not shared.created  # made on first use only
        client = shared.client
        assert shared.client is client
    assert shared_http_client.get() is None
    assert client.is_closed


async def test_the_runtime_publishes_a_shared_client():
    from agentrio import Runtime

    async with Runtime():
        shared = shared_http_client.get()
        assert shared is not None and not shared.created
    assert shared_http_client.get() is None


async def test_requests_reuse_the_shared_client(server):
    async with open_http_client():
        for _ in range(3):
            server.reply(Reply(chunks=[ANTHROPIC_START, ANTHROPIC_END]))
            await collect(anthropic(server))
    assert server.accepted_connections == 1


async def test_the_shared_pool_keeps_few_idle_connections(server):
    # Every connection of the pool costs each request a look, and each idle
    # one a look at the whole pool: 30 streams at once leave at most 20.
    async with open_http_client() as shared:
        async with trio.open_nursery() as nursery:
            for _ in range(30):
                server.reply(Reply(chunks=[ANTHROPIC_START, ANTHROPIC_END], pause=0.05))
                nursery.start_soon(collect, anthropic(server))
        assert server.accepted_connections == 30  # no cap: no stream waited for another
        assert len(shared.client._transport._pool.connections) <= 20


async def test_without_a_shared_client_each_request_has_its_own(server):
    for _ in range(2):
        server.reply(Reply(chunks=[ANTHROPIC_START, ANTHROPIC_END]))
        await collect(anthropic(server))
    assert server.accepted_connections == 2
    await trio.testing.wait_all_tasks_blocked()
    assert server.open_connections == 0  # the temporary clients were closed


async def test_an_explicit_client_wins_over_the_shared_one(server):
    async with httpx.AsyncClient() as mine, open_http_client() as shared:
        server.reply(Reply(chunks=[ANTHROPIC_START, ANTHROPIC_END]))
        await collect(anthropic(server, client=mine))
        assert len(mine._transport._pool.connections) == 1
        assert not shared.created


# --- cancellation ------------------------------------------------------------------


async def _cancel_mid_stream(model) -> None:
    with trio.CancelScope() as scope:
        async for event in model.stream(REQUEST):
            if isinstance(event, TextDelta):
                scope.cancel()
    assert scope.cancelled_caught


async def test_a_hundred_cancels_do_not_exhaust_a_two_connection_pool(server):
    limits = httpx.Limits(max_connections=2, max_keepalive_connections=2)
    # A leaked connection would make a later request wait for the pool and
    # fail with a pool timeout instead of hanging the test.
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(10.0, pool=5.0)) as client:
        model = anthropic(server, client)
        for _ in range(100):
            server.reply(Reply(chunks=[ANTHROPIC_START], hang=True))
            await _cancel_mid_stream(model)
        server.reply(Reply(chunks=[ANTHROPIC_START, ANTHROPIC_END]))
        events = await collect(model)
        assert events[-1].stop_reason == "stop"
        assert len(client._transport._pool.connections) <= 2
    assert server.accepted_connections == 101  # no connection was reused mid-body


async def test_closing_the_stream_early_returns_its_connection(server):
    async with httpx.AsyncClient(
        limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(10.0, pool=5.0)
    ) as client:
        model = anthropic(server, client)
        for _ in range(3):
            server.reply(Reply(chunks=[ANTHROPIC_START], hang=True))
            stream = model.stream(REQUEST)
            async for event in stream:
                if isinstance(event, TextDelta):
                    break
            await stream.aclose()
        server.reply(Reply(chunks=[ANTHROPIC_START, ANTHROPIC_END]))
        assert (await collect(model))[-1].stop_reason == "stop"
