"""``from_string("provider:model")``: an adapter configured from the environment."""

from __future__ import annotations

import os
from typing import Any

from .anthropic import Anthropic
from .openai_chat import OpenAIChat
from .openai_responses import OpenAIResponses
from .sse_model import SSEModel

#: prefix -> (adapter, API key variable, base URL variable)
PROVIDERS: dict[str, tuple[type[SSEModel], str, str]] = {
    "openai": (OpenAIChat, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "openai-responses": (OpenAIResponses, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": (Anthropic, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}


def from_string(spec: str, **options: Any) -> SSEModel:
    """The adapter ``spec`` names, e.g. ``"openai:gpt-4.1"``,
    ``"openai-responses:gpt-5"`` or ``"anthropic:claude-sonnet-4-5"``.

    The API key comes from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` and the
    base URL, when set, from ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``;
    ``options`` (``api_key=``, ``base_url=``, ``max_tokens=`` …) take
    precedence.
    """
    prefix, colon, model = spec.partition(":")
    if not prefix or not colon or not model:
        raise ValueError(f"expected 'provider:model', got {spec!r}")
    try:
        adapter, key_variable, url_variable = PROVIDERS[prefix]
    except KeyError:
        raise ValueError(
            f"unknown model provider {prefix!r} in {spec!r}; expected one of {sorted(PROVIDERS)}"
        ) from None
    if "api_key" not in options:
        options["api_key"] = os.environ.get(key_variable)
        if not options["api_key"]:
            raise ValueError(f"{key_variable} is not set: it is needed for {spec!r}")
    if "base_url" not in options and (base_url := os.environ.get(url_variable)):
        options["base_url"] = base_url
    return adapter(model, **options)
