"""Token usage, its cost, and their accounting."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs

from .checks import is_count


def is_cost(instance: Any, attribute: Any, value: Any) -> None:
    if value is None:
        return
    if type(value) is not float or not math.isfinite(value) or value < 0:
        raise TypeError(
            f"{type(instance).__name__}.{attribute.name}: expected a finite float of 0 or more, or None, "
            f"got {value!r}"
        )


@attrs.frozen
class Usage:
    """Tokens a request (or a run, a session) used, and what they cost in
    US dollars: ``cost`` is None when unknown (a model with no price), and
    never a guess. A sum's cost is None as soon as one of its terms that
    used tokens has no cost."""

    input_tokens: int = attrs.field(default=0, validator=is_count)
    output_tokens: int = attrs.field(default=0, validator=is_count)
    cache_read_tokens: int = attrs.field(default=0, validator=is_count)
    cache_write_tokens: int = attrs.field(default=0, validator=is_count)
    cost: float | None = attrs.field(default=None, validator=is_cost)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        # Sums of counts are counts (a run adds usage several times a turn).
        return counted(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            _sum_cost(self, other),
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


def _sum_cost(a: Usage, b: Usage) -> float | None:
    """The cost of ``a + b``: unknown when either used tokens at an unknown
    cost; usage of no tokens at all adds nothing."""
    if a.cost is None and (a.total_tokens or b.cost is None):
        return None
    if b.cost is None and b.total_tokens:
        return None
    return (a.cost or 0.0) + (b.cost or 0.0)


def counted(
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int,
    cache_write_tokens: int,
    cost: float | None = None,
) -> Usage:
    """A ``Usage`` of counts already known to be ints (and a cost known to
    be a finite float or None), its slots filled without the checks."""
    usage = _new(Usage)
    _set_input(usage, input_tokens)
    _set_output(usage, output_tokens)
    _set_cache_read(usage, cache_read_tokens)
    _set_cache_write(usage, cache_write_tokens)
    _set_cost(usage, cost)
    return usage


_new = object.__new__


def _setter(name: str) -> Callable[[Usage, Any], None]:
    """What sets the slot ``name`` of the frozen ``Usage``."""
    setter: Callable[[Usage, Any], None] = getattr(Usage, name).__set__
    return setter


_set_input = _setter("input_tokens")
_set_output = _setter("output_tokens")
_set_cache_read = _setter("cache_read_tokens")
_set_cache_write = _setter("cache_write_tokens")
_set_cost = _setter("cost")
