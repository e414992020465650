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
        # Sums of counts are counts: the slots are filled without the
        # checks (a run adds usage several times a turn).
        total = _new(Usage)
        _set_input(total, self.input_tokens + other.input_tokens)
        _set_output(total, self.output_tokens + other.output_tokens)
        _set_cache_read(total, self.cache_read_tokens + other.cache_read_tokens)
        _set_cache_write(total, self.cache_write_tokens + other.cache_write_tokens)
        return total

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


_new = object.__new__
_set_input = Usage.input_tokens.__set__  # type: ignore[attr-defined]
_set_output = Usage.output_tokens.__set__  # type: ignore[attr-defined]
_set_cache_read = Usage.cache_read_tokens.__set__  # type: ignore[attr-defined]
_set_cache_write = Usage.cache_write_tokens.__set__  # type: ignore[attr-defined]
