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
        # Sums of counts are counts (a run adds usage several times a turn).
        return counted(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


def counted(input_tokens: int, output_tokens: int, cache_read_tokens: int, cache_write_tokens: int) -> Usage:
    """A ``Usage`` of counts already known to be ints, its slots filled
    without the checks."""
    usage = _new(Usage)
    _set_input(usage, input_tokens)
    _set_output(usage, output_tokens)
    _set_cache_read(usage, cache_read_tokens)
    _set_cache_write(usage, cache_write_tokens)
    return usage


_new = object.__new__
_set_input = Usage.input_tokens.__set__  # type: ignore[attr-defined]
_set_output = Usage.output_tokens.__set__  # type: ignore[attr-defined]
_set_cache_read = Usage.cache_read_tokens.__set__  # type: ignore[attr-defined]
_set_cache_write = Usage.cache_write_tokens.__set__  # type: ignore[attr-defined]
