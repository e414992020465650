"""Prices meet what providers really answer: the usage and model names of
the recorded streams (tests/conformance) are priced by the built-in table
exactly as the formula says, and a model the table does not know costs None."""

from __future__ import annotations

import pytest

from agentrio.messages import Usage
from agentrio.models import BUILTIN_PRICES, Price, Prices

from .recordings import RECORDINGS
from .test_conformance import EXPECTED

PROVIDERS = {"openai-chat": "openai", "openai-responses": "openai-responses", "anthropic": "anthropic"}
#: The recorded models the table prices (by their undated names); the
#: others (gpt-3.5-turbo, gpt-5.5, claude-sonnet-4-6, gateways' models) it
#: does not know.
PRICED = {
    "gpt-4o-2024-08-06",
    "gpt-4o-mini-2024-07-18",
    "gpt-5-2025-08-07",
    "gpt-5-nano-2025-08-07",
    "claude-haiku-4-5-20251001",
    "claude-sonnet-4-5-20250929",
    "claude-3-5-sonnet-20240620",
}


def formula(usage: Usage, price: Price) -> float:
    cached = usage.cache_read_tokens * (price.cache_read or 0) + usage.cache_write_tokens * (
        price.cache_write or 0
    )
    return (usage.input_tokens * price.input + usage.output_tokens * price.output + cached) / 1e6


@pytest.mark.parametrize("file", sorted(f for f in EXPECTED if EXPECTED[f].error is None))
def test_a_recorded_answer_costs_what_the_formula_says_at_its_model_s_price(file):
    expected = EXPECTED[file]
    provider = PROVIDERS[RECORDINGS[file]["provider"]]
    priced = BUILTIN_PRICES.priced(expected.usage, provider, expected.model)
    price = BUILTIN_PRICES.price(provider, expected.model)
    if expected.model in PRICED:
        assert priced.cost == pytest.approx(formula(expected.usage, price), abs=1e-9)
        assert priced.cost > 0
    else:
        assert price is None and priced.cost is None, expected.model
    # The counts are kept as they were.
    assert priced.total_tokens == expected.usage.total_tokens


def test_a_dated_snapshot_finds_its_undated_price_and_responses_share_openai_s():
    assert (
        BUILTIN_PRICES.price("anthropic", "claude-haiku-4-5-20251001")
        is BUILTIN_PRICES["anthropic:claude-haiku-4-5"]
    )
    assert BUILTIN_PRICES.price("openai-responses", "gpt-4o-2024-08-06") is BUILTIN_PRICES["openai:gpt-4o"]
    assert BUILTIN_PRICES.price("openai", "gpt-4o-mini-2024-07-18") is BUILTIN_PRICES["openai:gpt-4o-mini"]
    assert BUILTIN_PRICES.price("openai", "gpt-5.5-2026-04-23") is None
    # A table laid over another wins where both price a model.
    mine = Price(1.0, 2.0)
    assert BUILTIN_PRICES.merged(Prices({"openai:gpt-4o": mine})).price("openai", "gpt-4o-2024-08-06") is mine
