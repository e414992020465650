"""Content parts: the pieces a message is made of."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs


@attrs.frozen
class Text:
    text: str

    type: ClassVar[str] = "text"


@attrs.frozen
class Thinking:
    """Model reasoning, kept so that it can be replayed to the same provider.

    ``signature`` is the provider's opaque proof (Anthropic's signature, or
    the encrypted content of an OpenAI Responses reasoning item). A redacted
    block carries no readable text; its payload travels in ``signature``.
    ``id`` is the provider's item id where replay needs it.
    """

    text: str
    signature: str | None = None
    redacted: bool = False
    id: str | None = None

    type: ClassVar[str] = "thinking"


@attrs.frozen
class ToolCall:
    """A call the model asked for.

    ``raw_arguments`` is set only when the model's arguments were not a JSON
    object: it keeps them as sent so the error the model gets back can say
    what was wrong, and ``arguments`` is then empty.
    """

    id: str
    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)
    raw_arguments: str | None = None

    type: ClassVar[str] = "tool_call"


Part = Text | Thinking | ToolCall
