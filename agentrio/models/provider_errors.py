"""Turning what a provider says went wrong into a ``ProviderError``.

This is the one place that recognizes context overflow. Whenever a provider
says the prompt does not fit (OpenAI's ``context_length_exceeded``,
Anthropic's "prompt is too long", the wording of OpenAI-compatible servers),
the error's ``type`` becomes ``CONTEXT_OVERFLOW`` whatever the provider
called it, and its HTTP status is kept. The agent loop maps that type to the
stop reason ``context_overflow``. A stream that *ends* because the context
filled up is not an error: the adapters finish it with
``Done("context_overflow")``.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from typing import Any

from .errors import ProviderError

CONTEXT_OVERFLOW = "context_overflow"
CONNECTION_ERROR = "connection_error"
#: The stream stalled or outlasted its adapter's deadline (worth a retry).
TIMEOUT = "timeout"

_OVERFLOW_CODES = frozenset({"context_length_exceeded", "context_window_exceeded"})
_OVERFLOW_PHRASES = (
    r"prompt is too long",  # Anthropic
    r"input is too long",  # Bedrock
    r"context[ _]length[ _]exceeded",
    r"maximum context length",  # OpenAI (older wording), vLLM, Mistral
    r"exceeds? the context window",  # OpenAI Responses
    r"context window (?:is )?exceeded",
    r"exceeds? (?:the )?(?:model's )?(?:maximum )?context (?:length|size|limit)",
    r"exceeds the available context size",  # llama.cpp
    r"too many tokens in (?:the )?prompt",
    r"reduce the length of the messages",
    r"input token count .* exceeds the maximum",  # Gemini through compatible gateways
)
_OVERFLOW_MESSAGE = re.compile("|".join(_OVERFLOW_PHRASES), re.IGNORECASE)


def is_context_overflow(code: str | None, message: str) -> bool:
    return code in _OVERFLOW_CODES or bool(_OVERFLOW_MESSAGE.search(message))


def provider_error(
    payload: Any, *, status: int | None = None, retry_after: float | None = None
) -> ProviderError:
    """A ``ProviderError`` from a parsed error object, in any of the shapes
    providers use: ``{"error": {...}}`` (OpenAI, OpenRouter, Groq),
    ``{"type": "error", "error": {...}}`` (Anthropic) or the error itself
    (OpenAI Responses stream events)."""
    error = payload.get("error", payload) if isinstance(payload, Mapping) else payload
    if not isinstance(error, Mapping):
        return ProviderError(status, "provider_error", str(error), retry_after)
    message = str(error.get("message") or "")
    # OpenRouter puts the upstream provider's own words in metadata.raw.
    metadata = error.get("metadata")
    if isinstance(metadata, Mapping) and isinstance(metadata.get("raw"), str):
        message = f"{message}: {metadata['raw']}" if message else metadata["raw"]
    code = error.get("code")
    if status is None:
        # In-band errors of OpenAI-compatible gateways carry the HTTP status
        # they stand for as ``code`` (OpenRouter) or ``status_code`` (Groq).
        status = next(
            (n for n in (code, error.get("status_code")) if isinstance(n, int) and 400 <= n <= 599),
            None,
        )
    code_name = code if isinstance(code, str) else None
    kind = error.get("type") or code_name or "provider_error"
    if is_context_overflow(code_name, message):
        kind = CONTEXT_OVERFLOW
    return ProviderError(status, str(kind), message or str(kind), retry_after)


def http_error(
    status: int, headers: Mapping[str, str], body: bytes, *, now: float | None = None
) -> ProviderError:
    """The error an HTTP response with a failing ``status`` stands for."""
    retry_after = parse_retry_after(headers, now=now)
    text = body.decode("utf-8", "replace")
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    if isinstance(payload, Mapping):
        return provider_error(payload, status=status, retry_after=retry_after)
    message = text.strip() or f"HTTP {status}"
    kind = CONTEXT_OVERFLOW if is_context_overflow(None, message) else "http_error"
    return ProviderError(status, kind, message, retry_after)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms`` (OpenAI),
    else ``retry-after`` as seconds or as an HTTP date."""
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def connection_error(message: str) -> ProviderError:
    return ProviderError(None, CONNECTION_ERROR, message)


def timeout_error(message: str) -> ProviderError:
    return ProviderError(None, TIMEOUT, message)
