"""Content parts: the pieces a message is made of."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from .checks import is_bool, is_json_object, is_optional_str, is_str
from .media import Document, Image


@attrs.frozen
class Text:
    text: str = attrs.field(validator=is_str)

    type: ClassVar[str] = "text"


@attrs.frozen
class Thinking:
    """Model reasoning, kept so that it can be replayed to the same provider.

    ``signature`` is the provider's opaque proof (Anthropic's signature, or
    the encrypted content of an OpenAI Responses reasoning item). A redacted
    block carries no readable text; its payload travels in ``signature``.
    ``id`` is the provider's item id where replay needs it.
    """

    text: str = attrs.field(validator=is_str)
    signature: str | None = attrs.field(default=None, validator=is_optional_str)
    redacted: bool = attrs.field(default=False, validator=is_bool)
    id: str | None = attrs.field(default=None, validator=is_optional_str)

    type: ClassVar[str] = "thinking"


@attrs.frozen
class ToolCall:
    """A call the model asked for.

    ``raw_arguments`` is set only when the model's arguments were not a JSON
    object: it keeps them as sent so the error the model gets back can say
    what was wrong, and ``arguments`` is then empty.
    """

    id: str = attrs.field(validator=is_str)
    name: str = attrs.field(validator=is_str)
    arguments: dict[str, Any] = attrs.field(factory=dict, validator=is_json_object)
    raw_arguments: str | None = attrs.field(default=None, validator=is_optional_str)

    type: ClassVar[str] = "tool_call"


Part = Text | Thinking | ToolCall | Image | Document
