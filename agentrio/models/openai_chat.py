"""``OpenAIChat``: the Chat Completions API of OpenAI and of the servers
that speak it (Ollama, vLLM, llama.cpp, OpenRouter, Groq …) via ``base_url``."""

from __future__ import annotations

import os
from typing import Any, ClassVar

import attrs

from .openai_chat_request import chat_request_body
from .openai_chat_stream import ChatStreamMapper
from .request import ModelRequest
from .sse_model import SSEModel, option

OPENAI_BASE_URL = "https://api.openai.com/v1"


def cache_key(request: ModelRequest, prompt_cache: bool | None, base_url: str) -> str | None:
    """The ``prompt_cache_key`` to send with ``request``, or None."""
    if prompt_cache is None:
        prompt_cache = base_url.rstrip("/") == OPENAI_BASE_URL
    return request.cache_key if prompt_cache and request.prompt_cache else None


def bearer_headers(api_key: str | None) -> dict[str, str]:
    # Local servers need no key: then no authorization header is sent.
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


@attrs.define
class OpenAIChat(SSEModel):
    base_url: str = option(default=OPENAI_BASE_URL)
    api_key: str | None = option(factory=lambda: os.environ.get("OPENAI_API_KEY"), repr=False)
    provider: str = option(default="openai")
    #: ``low`` / ``medium`` / ``high`` for reasoning models.
    reasoning_effort: str | None = option(default=None)
    #: Older compatible servers only know ``max_tokens``.
    max_tokens_field: str = option(default="max_completion_tokens")
    #: ``developer`` for OpenAI reasoning models that want it.
    system_role: str = option(default="system")

    #: Send a tool with ``strict: true`` when its schema has a lossless
    #: strict variant (see ``agentrio.models.strict``).
    strict_tools: bool = option(default=True)

    #: Send ``prompt_cache_key`` (the request's ``cache_key``, the session
    #: id) so that OpenAI routes a conversation's requests to the same
    #: cache. None: only to OpenAI's own ``base_url`` (a compatible server
    #: may refuse a field it does not know).
    prompt_cache: bool | None = option(default=None)

    path: ClassVar[str] = "/chat/completions"

    def headers(self) -> dict[str, str]:
        return bearer_headers(self.api_key)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return chat_request_body(
            self.model,
            request,
            max_tokens=request.max_tokens or self.max_tokens,
            max_tokens_field=self.max_tokens_field,
            temperature=self.temperature,
            reasoning_effort=self.reasoning_effort,
            system_role=self.system_role,
            strict_tools=self.strict_tools,
            prompt_cache_key=cache_key(request, self.prompt_cache, self.base_url),
        )

    def new_mapper(self) -> ChatStreamMapper:
        return ChatStreamMapper(self.model, self.provider)
