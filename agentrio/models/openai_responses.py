"""``OpenAIResponses``: the OpenAI Responses API."""

from __future__ import annotations

import os
from typing import Any, ClassVar

import attrs

from .openai_chat import OPENAI_BASE_URL, bearer_headers, cache_key
from .openai_responses_request import responses_request_body
from .openai_responses_stream import ResponsesStreamMapper
from .request import ModelRequest
from .sse_model import SSEModel, option


@attrs.define
class OpenAIResponses(SSEModel):
    base_url: str = option(default=OPENAI_BASE_URL)
    api_key: str | None = option(factory=lambda: os.environ.get("OPENAI_API_KEY"), repr=False)
    provider: str = option(default="openai-responses")
    #: ``minimal`` / ``low`` / ``medium`` / ``high``.
    reasoning_effort: str | None = option(default=None)
    #: ``auto`` / ``concise`` / ``detailed``: ask for readable reasoning summaries.
    reasoning_summary: str | None = option(default=None)
    #: Keep responses on the server. History is always sent in full, so this
    #: is only needed for the provider's own tooling.
    store: bool = option(default=False)

    #: Send a tool with ``strict: true`` when its schema has a lossless
    #: strict variant (see ``agentrio.models.strict``).
    strict_tools: bool = option(default=True)
    #: Send ``prompt_cache_key`` (see ``OpenAIChat.prompt_cache``).
    prompt_cache: bool | None = option(default=None)

    path: ClassVar[str] = "/responses"

    def headers(self) -> dict[str, str]:
        return bearer_headers(self.api_key)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return responses_request_body(
            self.model,
            request,
            provider=self.provider,
            max_tokens=request.max_tokens or self.max_tokens,
            temperature=self.temperature,
            reasoning_effort=self.reasoning_effort,
            reasoning_summary=self.reasoning_summary,
            store=self.store,
            strict_tools=self.strict_tools,
            prompt_cache_key=cache_key(request, self.prompt_cache, self.base_url),
        )

    def new_mapper(self) -> ResponsesStreamMapper:
        return ResponsesStreamMapper(self.model, self.provider)
