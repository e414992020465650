"""``Anthropic``: the Anthropic Messages API."""

from __future__ import annotations

import os
from typing import Any, ClassVar

import attrs

from .anthropic_request import anthropic_request_body, output_problem
from .anthropic_stream import AnthropicStreamMapper
from .output import AnswerToolMapper, OutputSpec
from .request import ModelRequest
from .sse_model import SSEModel, StreamMapper, option

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
#: The API requires a limit on every request.
DEFAULT_MAX_TOKENS = 16384


@attrs.define
class Anthropic(SSEModel):
    base_url: str = option(default=ANTHROPIC_BASE_URL)
    api_key: str | None = option(factory=lambda: os.environ.get("ANTHROPIC_API_KEY"), repr=False)
    provider: str = option(default="anthropic")
    max_tokens: int = option(default=DEFAULT_MAX_TOKENS)
    #: Extended thinking: the most tokens the model may think for; must be
    #: below ``max_tokens``.
    thinking_budget: int | None = option(default=None)
    anthropic_version: str = option(default=ANTHROPIC_VERSION)
    #: Mark cache breakpoints so each step reads the tools, the system prompt
    #: and the history so far from Anthropic's prompt cache.
    prompt_cache: bool = option(default=True)

    path: ClassVar[str] = "/v1/messages"

    def __attrs_post_init__(self) -> None:
        if self.thinking_budget is not None and self.thinking_budget >= self.max_tokens:
            raise ValueError(
                f"thinking_budget ({self.thinking_budget}) must be below max_tokens ({self.max_tokens})"
            )

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.anthropic_version}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return anthropic_request_body(
            self.model,
            request,
            provider=self.provider,
            max_tokens=request.max_tokens or self.max_tokens,
            temperature=self.temperature,
            thinking_budget=self.thinking_budget,
            prompt_cache=self.prompt_cache and request.prompt_cache,
        )

    def output_problem(self, output: OutputSpec) -> str | None:
        return output_problem(output)

    def new_mapper(self) -> AnthropicStreamMapper:
        return AnthropicStreamMapper(self.model, self.provider)

    def mapper_for(self, request: ModelRequest) -> StreamMapper:
        # A typed answer arrives as a call to the answer tool: read it as text.
        mapper = self.new_mapper()
        return mapper if request.output is None else AnswerToolMapper(mapper)
