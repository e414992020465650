"""Provider error bodies, retry-after headers and context overflow."""

from __future__ import annotations

import json

import pytest

from agentrio.models import CONTEXT_OVERFLOW
from agentrio.models.provider_errors import http_error, parse_retry_after, provider_error


def body(payload) -> bytes:
    return json.dumps(payload).encode()


def test_openai_error_body():
    error = http_error(
        404,
        {},
        body(
            {
                "error": {
                    "message": "The model `x` does not exist",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            }
        ),
    )
    assert (error.status, error.type, error.message) == (
        404,
        "invalid_request_error",
        "The model `x` does not exist",
    )


def test_anthropic_error_body():
    error = http_error(
        529, {}, body({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    )
    assert (error.status, error.type, error.message) == (529, "overloaded_error", "Overloaded")


def test_openrouter_error_keeps_the_upstream_reason():
    error = http_error(
        429,
        {},
        body(
            {"error": {"code": 429, "message": "Provider returned error", "metadata": {"raw": "slow down"}}}
        ),
    )
    assert (error.status, error.type, error.message) == (
        429,
        "provider_error",
        "Provider returned error: slow down",
    )


def test_non_json_body():
    error = http_error(502, {}, b"<html>Bad gateway</html>")
    assert (error.status, error.type, error.message) == (502, "http_error", "<html>Bad gateway</html>")
    assert http_error(503, {}, b"").message == "HTTP 503"


def test_in_band_error_codes_stand_for_statuses():
    assert provider_error({"error": {"code": 400, "message": "Token limit reached"}}).status == 400
    assert provider_error({"error": {"message": "m", "type": "t", "status_code": 503}}).status == 503
    assert (
        provider_error({"type": "error", "error": {"type": "overloaded_error", "message": "m"}}).status
        is None
    )


def test_responses_stream_error_event():
    error = provider_error({"type": "error", "code": "server_error", "message": "boom", "param": None})
    assert (error.status, error.type, error.message) == (None, "error", "boom")


@pytest.mark.parametrize(
    "status, payload",
    [
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        ),
        (
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 208310 tokens > 200000 maximum",
                },
            },
        ),
        (
            400,
            {
                "error": {
                    "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        ),
        (
            400,
            {
                "error": {
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "code": 400,
                }
            },
        ),
        (
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens",
                "type": "BadRequestError",
                "code": 400,
            },
        ),
        (
            400,
            {
                "error": {
                    "message": "Please reduce the length of the messages or completion.",
                    "type": "invalid_request_error",
                }
            },
        ),
    ],
)
def test_context_overflow_is_recognized(status, payload):
    error = http_error(status, {}, body(payload))
    assert error.type == CONTEXT_OVERFLOW
    assert error.status == status


def test_context_overflow_in_a_plain_text_body_and_in_band():
    assert http_error(413, {}, b"prompt is too long").type == CONTEXT_OVERFLOW
    assert (
        provider_error({"type": "error", "code": "context_length_exceeded", "message": "too long"}).type
        == CONTEXT_OVERFLOW
    )


def test_other_invalid_requests_are_not_overflow():
    error = http_error(
        400, {}, body({"error": {"message": "Invalid 'temperature'", "type": "invalid_request_error"}})
    )
    assert error.type == "invalid_request_error"


def test_retry_after_headers():
    assert parse_retry_after({"retry-after": "12"}) == 12.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=1445412500.0) == 10.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=1445412600.0) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert http_error(429, {"retry-after": "3"}, b"{}").retry_after == 3.0
