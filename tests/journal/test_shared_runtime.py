"""Runtimes sharing one PostgreSQL database: input posted by one reaches the
agent another holds, once; a runtime can wait for a session held elsewhere;
an agent whose lease is lost stops, its run naming LeaseLost."""

from __future__ import annotations

import pytest
import trio

import agentrio
from agentrio import AgentSpec, RemoteInput, Runtime, ScriptedModel, UserMessage
from agentrio.journal.records import InboxSpliced

from ..helpers import say
from .places import Place


@pytest.fixture
def place(dsn):
    return Place("postgres", dsn)


def user_texts(agent) -> list[str]:
    return [m.text for m in agent.messages if isinstance(m, UserMessage)]


def queued_ids(place, session_id) -> list[str]:
    return [q.id for r in place.stored_records(session_id) if isinstance(r, InboxSpliced) for q in r.items]


async def test_input_posted_by_another_runtime_reaches_the_holder_once(place):
    model = ScriptedModel([say("first"), say("second")])
    async with Runtime(place()) as owner, Runtime(place()) as other:
        agent = await owner.create(AgentSpec("a", model), "s1")
        await other.store.post_input("s1", RemoteInput("followup", UserMessage("one")))
        await other.store.post_input("s1", RemoteInput("followup", UserMessage("two")))
        with trio.fail_after(10):
            while len(agent.messages) < 4:
                await agent.wait_idle()
                await trio.sleep(0.01)
        assert [m.text for m in agent.messages] == ["one", "first", "two", "second"]
        await owner.store.sync("s1")
    # Both taken in, each once, and no longer posted.
    ids = queued_ids(place, "s1")
    assert len(ids) == len(set(ids)) == 2 and all(i.startswith("remote_") for i in ids)
    assert place.execute("SELECT count(*) FROM inputs") == [(0,)]


async def test_a_taken_over_session_carries_on_with_input_posted_while_nobody_held_it(place):
    async with Runtime(place()) as first:
        agent = await first.create(AgentSpec("a", ScriptedModel([])), "s1")
        await first.dispose(agent)
    async with place() as sender:
        await sender.post_input("s1", RemoteInput("followup", UserMessage("while away")))
    model = ScriptedModel([say("back")])
    async with Runtime(place()) as second:
        agent = await second.create(AgentSpec("a", model), "s1")
        with trio.fail_after(10):
            while [m.text for m in agent.messages][-1:] != ["back"]:
                await agent.wait_idle()
                await trio.sleep(0.01)
        assert user_texts(agent) == ["while away"]
    assert place.execute("SELECT count(*) FROM inputs") == [(0,)]


async def test_an_input_whose_records_a_dead_holder_committed_is_not_taken_in_again(place):
    async with place() as first:
        await first.create_session(agentrio.journal.SessionInfo("s1"))
        item = await first.post_input("s1", RemoteInput("followup", UserMessage("once")))
        # The holder took it in (its records committed), then died before
        # the deletion was committed.
        queued = agentrio.mailbox.QueuedInput(f"remote_{item.id}", item.message)
        await first.append("s1", [InboxSpliced("next_turn", 0, 0, [queued], "send")])
        await first.sync("s1")
        place.execute("UPDATE leases SET expires_at = clock_timestamp() WHERE session_id = 's1'")
    async with Runtime(place()) as second:
        agent = await second.create(AgentSpec("a", ScriptedModel([say("done")])), "s1")
        await agent.resume()
        with trio.fail_after(10):
            while [m.text for m in agent.messages][-1:] != ["done"]:
                await agent.wait_idle()
                await trio.sleep(0.01)
            while place.execute("SELECT count(*) FROM inputs") != [(0,)]:
                await trio.sleep(0.05)
        assert user_texts(agent) == ["once"]
    assert queued_ids(place, "s1") == [f"remote_{item.id}"]


async def test_create_can_wait_for_the_runtime_holding_the_session(place):
    async with Runtime(place()) as first, Runtime(place()) as second:
        held = await first.create(AgentSpec("a", ScriptedModel([say("from the first")])), "s1")
        await held.run("hello")
        with pytest.raises(agentrio.SessionHeld):
            await second.create(AgentSpec("a", ScriptedModel([])), "s1")
        opened = []

        async def open_it():
            opened.append(await second.create(AgentSpec("a", ScriptedModel([])), "s1", wait=True))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(open_it)
            await trio.sleep(0.5)
            assert opened == []
            await first.dispose(held)
        (agent,) = opened
        assert [m.text for m in agent.messages] == ["hello", "from the first"]
