"""Token usage and its accounting."""

from __future__ import annotations

import attrs

from .checks import is_count


@attrs.frozen
class Usage:
    input_tokens: int = attrs.field(default=0, validator=is_count)
    output_tokens: int = attrs.field(default=0, validator=is_count)
    cache_read_tokens: int = attrs.field(default=0, validator=is_count)
    cache_write_tokens: int = attrs.field(default=0, validator=is_count)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

