"""Cost in US dollars: Usage.cost from Prices (built-in, Runtime's, spec's),
RunResult.cost and the session's total, and Limits(max_cost) stopping a run
"budget" before the request that would take it past."""

from __future__ import annotations

import pytest

from agentrio import AgentSpec, Limits, Price, Prices, Runtime, ScriptedModel, SQLiteStore, Usage, tool
from agentrio.messages import AssistantMessage, Text, ToolCall
from agentrio.models import BUILTIN_PRICES, Anthropic, OpenAIChat

from .fake_anthropic import start_fake_anthropic
from .fake_openai import start_fake_openai

SONNET = BUILTIN_PRICES["anthropic:claude-sonnet-4-5"]
USAGE = Usage(input_tokens=1234, output_tokens=567, cache_read_tokens=8901, cache_write_tokens=2345)


def formula(usage: Usage, price: Price) -> float:
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1e6


@tool
async def look() -> str:
    """Look around."""
    return "a room"


def said(text: str, usage: Usage = USAGE) -> AssistantMessage:
    return AssistantMessage([Text(text)], usage=usage)


async def test_a_priced_model_s_usage_costs_what_the_formula_says_per_message_run_and_session(
    nursery, tmp_path
):
    replies = [AssistantMessage([ToolCall("c1", "look", {})], usage=USAGE), said("A room.")]
    server = await start_fake_anthropic(nursery, replies)
    # The response names a dated snapshot: it finds the price of its undated name.
    model = Anthropic("claude-sonnet-4-5-20250929", base_url=server.base_url, api_key="k")
    async with Runtime(SQLiteStore(tmp_path / "s.db")) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[look]), session_id="s")
        result = await agent.run("Where am I?")
        for message in (m for m in result.new_messages if m.role == "assistant"):
            assert message.usage.cost == pytest.approx(formula(USAGE, SONNET), abs=1e-9)
        assert result.cost == pytest.approx(2 * formula(USAGE, SONNET), abs=1e-9)
        assert agent.usage.cost == pytest.approx(result.cost, abs=1e-12)
    # The cost is journaled with each message: a restored session has the same total.
    async with Runtime(SQLiteStore(tmp_path / "s.db")) as rt:
        restored = await rt.create(AgentSpec("a", model, tools=[look]), session_id="s")
        assert restored.usage.cost == pytest.approx(result.cost, abs=1e-12)


async def test_a_model_with_no_known_price_costs_none_not_a_guess(nursery):
    server = await start_fake_openai(nursery, [said("hi")])
    async with Runtime() as rt:
        agent = await rt.create(
            AgentSpec("a", OpenAIChat("my-local-model", base_url=server.base_url, api_key="k"))
        )
        result = await agent.run("hello")
    assert result.usage.input_tokens == USAGE.input_tokens and result.cost is None


async def test_the_spec_s_prices_go_over_the_runtime_s_which_go_over_the_built_in_table(nursery):
    server = await start_fake_openai(nursery, [said("one"), said("two")])
    model = OpenAIChat("gpt-4.1", base_url=server.base_url, api_key="k")
    runtime_price = Price(input=1.0, output=1.0, cache_read=1.0, cache_write=1.0)
    spec_price = Price(input=3.0, output=0.0, cache_read=0.0)
    async with Runtime(prices={"openai:gpt-4.1": runtime_price}) as rt:
        by_runtime = await (await rt.create(AgentSpec("a", model))).run("hi")
        spec = AgentSpec("b", model, prices=Prices({"openai:gpt-4.1": spec_price}))
        by_spec = await (await rt.create(spec)).run("hi")
    # The fake reports OpenAI's cache reads, and no cache writes.
    tokens = USAGE.input_tokens + USAGE.output_tokens + USAGE.cache_read_tokens
    assert by_runtime.cost == pytest.approx(tokens * 1.0 / 1e6, abs=1e-9)
    assert by_spec.cost == pytest.approx(3.0 * USAGE.input_tokens / 1e6, abs=1e-9)


def test_usage_of_a_kind_whose_price_is_unknown_costs_none():
    price = Price(input=2.0, output=8.0, cache_read=0.5, cache_write=None)
    assert price.cost(Usage(10, 10, 10)) == pytest.approx((20 + 80 + 5) / 1e6, abs=1e-12)
    assert price.cost(Usage(10, 10, 0, 1)) is None


def test_a_sum_is_unknown_once_a_term_that_used_tokens_is_unknown():
    known = Usage(10, 1, cost=0.5)
    assert (Usage() + known).cost == 0.5
    assert (known + Usage(3, 0)).cost is None
    assert (Usage() + Usage()).cost is None


def test_prices_are_checked_when_made():
    with pytest.raises(ValueError, match="Price.input"):
        Price(input=-1.0, output=1.0)
    with pytest.raises(ValueError, match="openai:gpt-4.1"):
        Prices({"gpt-4.1": Price(1.0, 1.0)})
    with pytest.raises(ValueError, match="Limits.max_cost"):
        Limits(max_cost=0)
    with pytest.raises(TypeError, match="AgentSpec.prices"):
        AgentSpec("a", ScriptedModel([]), prices=[Price(1.0, 1.0)])
    with pytest.raises(TypeError, match="expected a Price"):
        AgentSpec("a", ScriptedModel([]), prices={"openai:gpt-4.1": 2.0})


async def test_a_run_stops_budget_before_the_request_that_would_take_it_past_max_cost(nursery):
    replies = [AssistantMessage([ToolCall("c1", "look", {})], usage=USAGE), said("A room.")]
    server = await start_fake_anthropic(nursery, replies)
    model = Anthropic("claude-sonnet-4-5", base_url=server.base_url, api_key="k")
    first_cost = formula(USAGE, SONNET)
    # Room for the first request, not for the second one's input on top of it.
    limits = Limits(max_cost=first_cost + 0.001)
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[look], limits=limits))
        result = await agent.run("Where am I?")
    assert result.stop_reason == "budget" and "max_cost" in result.error
    assert len(server.requests) == 1
    assert result.cost == pytest.approx(first_cost, abs=1e-9)
    # The call was answered: history stays valid for the next run.
    assert [m.role for m in result.new_messages] == ["user", "assistant", "tool_result"]


async def test_a_budget_with_no_known_price_stops_before_the_first_request(nursery):
    server = await start_fake_openai(nursery, [said("hi")])
    model = OpenAIChat("my-local-model", base_url=server.base_url, api_key="k")
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model, limits=Limits(max_cost=1.0)))
        result = await agent.run("hello")
    assert result.stop_reason == "budget" and "no price is known for openai:my-local-model" in result.error
    assert server.requests == []


def test_a_run_stopped_by_its_budget_exits_as_a_limit_does():
    from agentrio.cli.live_view import exit_status

    assert exit_status("budget") == exit_status("max_turns") == 3
