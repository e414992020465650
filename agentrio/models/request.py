"""What the agent asks a model for."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..messages import Message

if TYPE_CHECKING:
    from .events import StreamEvent
    from .output import OutputSpec


@attrs.frozen
class ToolSpec:
    """A tool as a model sees it: a name, a description, a JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@attrs.frozen
class ModelRequest:
    """One request to a model. ``output``, when set, asks for a typed answer:
    each adapter turns it into its provider's mechanism (see
    ``agentrio.models.output``), and the answer's text is the JSON to give
    ``output.parse``. ``max_tokens``, when set, is the output budget of this
    request, in place of the adapter's own. ``prompt_cache`` lets the
    adapter ask its provider to cache the request's prefix (where the
    adapter's own ``prompt_cache`` allows it); ``cache_key`` names the
    conversation for providers that route by it (the session id)."""

    system_prompt: str
    messages: list[Message]
    tools: list[ToolSpec] = attrs.field(factory=list)
    output: OutputSpec | None = attrs.field(default=None, kw_only=True)
    max_tokens: int | None = attrs.field(default=None, kw_only=True)
    prompt_cache: bool = attrs.field(default=True, kw_only=True)
    cache_key: str | None = attrs.field(default=None, kw_only=True)


class Model(Protocol):
    """Anything that streams an answer to a ``ModelRequest``.

    ``stream`` is an async generator of normalized events; it raises
    ``ProviderError`` when the request fails.
    """

    def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]: ...
