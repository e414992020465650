"""What tokens cost: ``Price`` per model, ``Prices`` a table of them.

Prices are US dollars per million tokens. ``Prices`` is keyed by model
string (``"openai:gpt-4.1"``, ``"anthropic:claude-sonnet-4-5"``, as
``models.from_string`` reads them); ``BUILTIN_PRICES`` holds the models the
README names and their close kin, and a table given to ``AgentSpec`` or
``Runtime`` is merged over it. A model with no price, or usage of a kind its
price leaves unknown (``None``), costs ``None``: never a wrong number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from ..messages import Usage
from ..messages.usage import counted


def _per_million(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None and attribute.name.startswith("cache_"):
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(
            f"Price.{attribute.name}: expected US dollars per million tokens (0 or more), got {value!r}"
        )


@attrs.frozen
class Price:
    """US dollars per million tokens: fresh ``input``, ``output``, and
    input read from (``cache_read``) or written to (``cache_write``) the
    provider's prompt cache; a cache price of None is unknown."""

    input: float = attrs.field(validator=_per_million)
    output: float = attrs.field(validator=_per_million)
    cache_read: float | None = attrs.field(default=None, validator=_per_million)
    cache_write: float | None = attrs.field(default=None, validator=_per_million)

    def cost(self, usage: Usage) -> float | None:
        """What ``usage`` costs at this price (None when it used tokens of a
        kind whose price is unknown)."""
        total = usage.input_tokens * self.input + usage.output_tokens * self.output
        for tokens, price in (
            (usage.cache_read_tokens, self.cache_read),
            (usage.cache_write_tokens, self.cache_write),
        ):
            if tokens:
                if price is None:
                    return None
                total += tokens * price
        return total / 1_000_000


#: A dated snapshot's suffix: ``-2025-04-14`` (OpenAI), ``-20250929`` (Anthropic).
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")
#: Providers whose models are priced under another's name.
_SAME_PRICES = {"openai-responses": "openai"}


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or ":" not in key:
        raise ValueError(f"Prices: expected keys such as 'openai:gpt-4.1', got {key!r}")
    return key


class Prices(Mapping[str, Price]):
    """A table of prices keyed by model string; ``merged`` lays another
    over it. A response's model (``claude-sonnet-4-5-20250929``) finds the
    price of its undated name, and ``openai-responses:`` models the prices
    of ``openai:`` ones."""

    def __init__(self, table: Mapping[str, Price] | None = None) -> None:
        self._table: dict[str, Price] = {}
        for key, price in (table or {}).items():
            if not isinstance(price, Price):
                raise TypeError(f"Prices[{key!r}]: expected a Price, got {price!r}")
            self._table[_check_key(key)] = price

    def __getitem__(self, key: str) -> Price:
        return self._table[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"Prices({self._table!r})"

    def merged(self, other: Mapping[str, Price] | None) -> Prices:
        """This table with ``other``'s prices laid over it."""
        if not other:
            return self
        return Prices({**self._table, **other})

    def price(self, provider: str, model: str) -> Price | None:
        """The price of ``model`` at ``provider``, or None."""
        providers = [provider] + ([_SAME_PRICES[provider]] if provider in _SAME_PRICES else [])
        for name in (model, _SNAPSHOT.sub("", model)):
            for who in providers:
                if (price := self._table.get(f"{who}:{name}")) is not None:
                    return price
        return None

    def priced(self, usage: Usage, provider: str, model: str) -> Usage:
        """``usage`` with its cost at the price of ``model`` (None when unknown)."""
        price = self.price(provider, model)
        cost = price.cost(usage) if price is not None else None
        return counted(
            usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens, cost
        )


def _p(
    input: float, output: float, cache_read: float | None = None, cache_write: float | None = None
) -> Price:
    return Price(input, output, cache_read, cache_write)


#: List prices (US dollars per million tokens) of the models the README
#: names and their close kin. Anthropic's cache writes are its five-minute
#: ones; OpenAI caches without a charge for writing (and reports none).
BUILTIN_PRICES = Prices(
    {
        "anthropic:claude-opus-4-5": _p(5.0, 25.0, 0.5, 6.25),
        "anthropic:claude-opus-4-1": _p(15.0, 75.0, 1.5, 18.75),
        "anthropic:claude-opus-4-0": _p(15.0, 75.0, 1.5, 18.75),
        "anthropic:claude-opus-4": _p(15.0, 75.0, 1.5, 18.75),
        "anthropic:claude-sonnet-4-5": _p(3.0, 15.0, 0.3, 3.75),
        "anthropic:claude-sonnet-4-0": _p(3.0, 15.0, 0.3, 3.75),
        "anthropic:claude-sonnet-4": _p(3.0, 15.0, 0.3, 3.75),
        "anthropic:claude-haiku-4-5": _p(1.0, 5.0, 0.1, 1.25),
        "anthropic:claude-3-7-sonnet": _p(3.0, 15.0, 0.3, 3.75),
        "anthropic:claude-3-5-sonnet": _p(3.0, 15.0, 0.3, 3.75),
        "anthropic:claude-3-5-haiku-latest": _p(0.8, 4.0, 0.08, 1.0),
        "anthropic:claude-3-5-haiku": _p(0.8, 4.0, 0.08, 1.0),
        "openai:gpt-4.1": _p(2.0, 8.0, 0.5, 0.0),
        "openai:gpt-4.1-mini": _p(0.4, 1.6, 0.1, 0.0),
        "openai:gpt-4.1-nano": _p(0.1, 0.4, 0.025, 0.0),
        "openai:gpt-4o": _p(2.5, 10.0, 1.25, 0.0),
        "openai:gpt-4o-mini": _p(0.15, 0.6, 0.075, 0.0),
        "openai:gpt-5": _p(1.25, 10.0, 0.125, 0.0),
        "openai:gpt-5-mini": _p(0.25, 2.0, 0.025, 0.0),
        "openai:gpt-5-nano": _p(0.05, 0.4, 0.005, 0.0),
        "openai:o3": _p(2.0, 8.0, 0.5, 0.0),
        "openai:o4-mini": _p(1.1, 4.4, 0.275, 0.0),
    }
)
