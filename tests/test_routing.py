"""Routing: a hook chooses the model of each request."""

from agentrio import AgentSpec, Hooks, ProviderError, ScriptedModel

from .conftest import record
from .helpers import say


async def test_summaries_may_go_to_a_cheaper_model(rt):
    main, cheap = ScriptedModel([say("hello")]), ScriptedModel([say("the summary")])
    routes = []

    def route(r):
        routes.append((r.purpose, r.attempt, r.error))
        return cheap if r.purpose == "summary" else None

    agent = await rt.create(AgentSpec("a", main, hooks=Hooks(choose_model=route)))
    await agent.run("hi")
    await agent.compact()
    assert routes == [("step", 1, None), ("summary", 1, None)]
    assert len(main.requests) == 1 and len(cheap.requests) == 1
    assert "the summary" in agent.messages[0].text


async def test_a_fallback_model_may_answer_after_an_error(rt):
    overloaded = ProviderError(529, "overloaded_error", "busy")
    main, fallback = ScriptedModel([overloaded]), ScriptedModel([say("from the fallback")])

    def route(r):
        return fallback if r.error is not None else None

    hooks = Hooks(choose_model=route, on_request_error=lambda err: 0.0)
    agent = await rt.create(AgentSpec("a", main, hooks=hooks))
    async with record(agent) as rec:
        result = await agent.run("hi")
    assert result.text == "from the fallback"
    assert [e.attempt for e in rec.of("request_retry")] == [1]
    assert len(main.requests) == 1 and fallback.requests[0].messages == main.requests[0].messages


async def test_a_route_that_is_not_a_model_ends_the_run_with_an_error(rt):
    agent = await rt.create(AgentSpec("a", ScriptedModel([]), hooks=Hooks(choose_model=lambda r: "gpt")))
    result = await agent.run("hi")
    assert result.stop_reason == "error"
    assert result.error == "TypeError: Hooks.choose_model returned 'gpt', not a model"
