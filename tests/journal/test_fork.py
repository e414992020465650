"""Forks: a new session seeded with a prefix of another's history, cut at a
message or at the end of a turn, never inside an open turn."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
import trio

from agentrio import AgentSpec, Runtime, ScriptedModel, Tool
from agentrio.journal import ForkRefused, SessionNotFound
from agentrio.journal.fork import fork_session
from agentrio.messages import TOOL_OUTCOME_UNKNOWN

from ..helpers import calls, echo_tool, say


def two_turn_spec():
    model = ScriptedModel([calls(("echo", {"text": "a"})), say("one"), say("two")])
    return AgentSpec("a", model, tools=[echo_tool()])


async def two_turns(rt):
    agent = await rt.create(two_turn_spec(), "src")
    await agent.run("first")
    await agent.run("second")
    return agent


def texts(agent):
    return [m.text for m in agent.messages]


async def test_fork_at_a_message_records_its_parent_and_survives_a_restart(stores):
    async with Runtime(stores()) as rt:
        await two_turns(rt)
        fork = await rt.fork("src", at_message=4)
        assert texts(fork) == ["first", "", "echo: a", "one"]
        fork_id = fork.session_id
    spec = AgentSpec("a", ScriptedModel([say("forked")], strict=True))
    async with Runtime(stores()) as rt:
        fork = await rt.create(spec, fork_id)
        assert texts(fork) == ["first", "", "echo: a", "one"]
        assert (await fork.run("again")).stop_reason == "completed"
        info = (await rt.store.load_state(fork_id)).info
        assert (info.parent_session_id, info.seed_length) == ("src", 4)


async def test_fork_at_a_turn_cuts_at_its_end(stores):
    async with Runtime(stores()) as rt:
        await two_turns(rt)
        assert texts(await rt.fork("src", at_turn=1)) == ["first", "", "echo: a", "one"]
        assert len((await rt.fork("src", at_turn=2)).messages) == 6
        empty = await rt.fork("src", at_turn=0)
        assert empty.messages == ()
        # A fork's turn 0 is its seed.
        child = await rt.fork("src", at_turn=1)
        grandchild = await rt.fork(child.session_id, at_turn=0)
        assert texts(grandchild) == texts(child)
        info = (await rt.store.load_state(grandchild.session_id)).info
        assert (info.parent_session_id, info.seed_length) == (child.session_id, 4)


async def test_a_stored_session_is_forked_with_the_spec_given(stores):
    async with Runtime(stores()) as rt:
        await two_turns(rt)
    async with Runtime(stores()) as rt:
        with pytest.raises(ValueError, match="not live here: pass the spec"):
            await rt.fork("src", at_message=2)
        fork = await rt.fork("src", at_message=6, spec=two_turn_spec())
        assert texts(fork)[-2:] == ["second", "two"]
        assert len(await rt.store.list_sessions()) == 2


@pytest.mark.parametrize(
    "cut, error",
    [
        ({"at_message": 2}, "cut leaves tool calls without results"),
        ({"at_message": 7}, r"between 0 and 6 \(the committed messages of session 'src'\), got 7"),
        ({"at_turn": 3}, "has no turn 3; its ended turns are 0 to 2"),
    ],
)
async def test_a_cut_that_breaks_the_history_is_refused(new_store, cut, error):
    async with Runtime(new_store()) as rt:
        await two_turns(rt)
        with pytest.raises(ForkRefused, match=error):
            await rt.fork("src", **cut)
        assert len(await rt.store.list_sessions()) == 1


async def test_fork_takes_one_cut_and_an_existing_session(new_store):
    async with Runtime(new_store()) as rt:
        await two_turns(rt)
        with pytest.raises(TypeError, match="exactly one of at_message and at_turn"):
            await rt.fork("src", at_message=2, at_turn=1)
        with pytest.raises(SessionNotFound):
            await rt.fork("nope", at_message=0, spec=two_turn_spec())


@asynccontextmanager
async def turn_two_running(new_store):
    """A session "src" whose turn 2 has committed its first step (3
    messages) and is running a blocking call; yields the runtime, the
    agent, and the event that releases the call."""
    started, release = trio.Event(), trio.Event()

    async def block(args, ctx):
        started.set()
        await release.wait()
        return "released"

    model = ScriptedModel([say("earlier"), calls(("echo", {"text": "a"})), calls(("block", {})), say("end")])
    tools = [echo_tool(), Tool("block", "Blocks.", {"type": "object", "properties": {}}, block)]
    async with Runtime(new_store()) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=tools), "src")
        await agent.run("before")
        await agent.followup("go")
        await started.wait()
        yield rt, agent, release


async def test_a_fork_with_repair_closes_an_open_turn_as_crash_repair_would(new_store):
    async with turn_two_running(new_store) as (rt, agent, release):
        fork = await rt.fork("src", at_turn=2, repair=True, spec=AgentSpec("f", ScriptedModel([say("on")])))
        history = list(fork.messages)
        assert [m.role for m in history] == [
            "user",
            "assistant",
            "user",
            "assistant",
            "tool_result",
            "assistant",
            "tool_result",
        ]
        closing = history[-1]
        assert closing.is_error and closing.text.startswith(TOOL_OUTCOME_UNKNOWN)  # it had started
        assert texts(await rt.fork("src", at_message=5, repair=True)) == texts(fork)[:5]
        with pytest.raises(ForkRefused, match="leaves tool calls without results"):
            await rt.fork("src", at_message=6, repair=True)
        assert (await fork.run("go on")).text == "on"  # a history a run can go on from
        release.set()
        await agent.wait_idle()
    # The source was only read: its call ends with its own result.
    assert agent.messages[6].text == "released" and agent.messages[-1].text == "end"


async def test_a_cut_inside_an_open_turn_is_refused(new_store):
    async with turn_two_running(new_store) as (rt, agent, release):
        assert len(agent.messages) == 2 + 3
        with pytest.raises(
            ForkRefused, match="inside turn 2, which is still open; cut at message 2 or before"
        ):
            await rt.fork("src", at_message=5)
        with pytest.raises(ForkRefused, match="turn 2: the turn is still open"):
            await rt.fork("src", at_turn=2)
        assert texts(await rt.fork("src", at_message=2)) == ["before", "earlier"]
        assert texts(await rt.fork("src", at_turn=1)) == ["before", "earlier"]
        release.set()
        await agent.wait_idle()
        assert len((await rt.fork("src", at_turn=2)).messages) == 2 + 6


async def test_a_fork_records_the_name_of_its_spec_and_a_stored_fork_its_sources(stores):
    async with Runtime(stores()) as rt:
        await two_turns(rt)
        live = await rt.fork("src", at_message=4)
        other = await rt.fork("src", at_message=4, spec=AgentSpec("reviewer", ScriptedModel([])))
        # A fork made without a spec (as `agentrio sessions fork` does).
        stored = await fork_session(rt.store, other.session_id, at_message=4)
    async with stores() as store:
        infos = {info.session_id: info for info in await store.list_sessions()}
    assert {i.session_id: (i.agent_name, i.parent_session_id, i.spawned_by) for i in infos.values()} == {
        "src": ("a", None, None),
        live.session_id: ("a", "src", None),
        other.session_id: ("reviewer", "src", None),
        stored.info.session_id: ("reviewer", other.session_id, None),
    }
