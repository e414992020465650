"""How a turn ends when its input or its steps say so, and what a runtime
refuses: rules that held without a test of their own."""

import pytest

from agentrio import AgentSpec, AssistantMessage, Hooks, Runtime, ScriptedModel, Text

from .conftest import record
from .helpers import calls, echo_tool, say


async def test_a_pre_step_that_empties_the_first_input_ends_the_turn_completed_without_a_step(rt):
    model = ScriptedModel([])
    agent = await rt.create(AgentSpec("a", model, hooks=Hooks(pre_step=lambda step: [])))
    async with record(agent) as rec:
        result = await agent.run("ignored")
    assert result.stop_reason == "completed"
    assert rec.types() == ["agent_start", "turn_start", "turn_end", "agent_end"]
    assert model.requests == [] and agent.messages == ()
    assert not agent.inbox  # the input was claimed, not left queued


async def test_max_tokens_is_sticky_a_later_completed_step_does_not_clear_it(rt):
    cut = AssistantMessage([Text("half an ans")], stop_reason="max_tokens")
    stops = []

    async def turn_stopping(agent):
        stops.append(len(stops))
        if len(stops) == 1:
            await agent.inject("go on")  # the turn gets another step

    model = ScriptedModel([cut, say("the rest")])
    agent = await rt.create(AgentSpec("a", model, hooks=Hooks(turn_stopping=turn_stopping)))
    async with record(agent) as rec:
        result = await agent.run("answer")
    assert result.stop_reason == "max_tokens"
    assert [e.stop_reason for e in rec.of("turn_end")] == ["max_tokens"]
    assert len(rec.of("step_end")) == 2 and result.text == "the rest"
    assert stops == [0, 1]


async def test_a_session_already_live_in_the_runtime_is_refused():
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("one")])), "s1")
        with pytest.raises(ValueError, match="session 's1' is already open in this runtime"):
            await rt.create(AgentSpec("b", ScriptedModel([])), "s1")
        # The live agent is untouched.
        assert (await agent.run("hi")).text == "one"


async def test_the_state_walk_of_invalid_arguments_then_fixed_ones_then_an_answer(rt):
    """The QueryEngine seed's sample: call_model -> validate_tool -> recover
    -> call_model -> execute_tool -> call_model -> final."""
    model = ScriptedModel([calls(("echo", {"txt": "hi"})), calls(("echo", {"text": "hi"})), say("echoed")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    async with record(agent) as rec:
        result = await agent.run("echo hi")
    assert result.stop_reason == "completed" and result.turns == 1
    assert rec.states() == [
        "build_context",
        "call_model",
        "validate_tools",
        "check_permission",
        "execute_tools",
        "append_results",
        "recover",
        "build_context",
        "call_model",
        "validate_tools",
        "check_permission",
        "execute_tools",
        "append_results",
        "build_context",
        "call_model",
        "done",
    ]
    invalid, valid = [m for m in agent.messages if m.role == "tool_result"]
    assert invalid.error_code == "TOOL_INPUT_INVALID" and "'text' is a required property" in invalid.text
    assert valid.text == "echo: hi"
    assert model.requests[1].messages[-1] == invalid  # the model saw why, and fixed its arguments
