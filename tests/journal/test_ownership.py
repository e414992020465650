"""Ownership on PostgreSQL: a session is written by the one store holding its
lease; a takeover fences the former holder off."""

from __future__ import annotations

import datetime

import pytest
import trio

from agentrio import AgentSpec, Runtime, ScriptedModel, Tool, UserMessage
from agentrio.journal import LeaseLost, SessionHeld, SessionInfo, SessionNotFound
from agentrio.journal.records import MessageAppended, ToolCallStarted

from ..helpers import calls, say
from .places import Place


@pytest.fixture
def place(dsn):
    return Place("postgres", dsn)


def said(text: str) -> MessageAppended:
    return MessageAppended(UserMessage(text))


def texts(records) -> list[str]:
    return [r.message.text for r in records]


def end_lease(place, session_id):
    """What a paused holder sees: its lease ran out (no renewal came)."""
    place.execute("UPDATE leases SET expires_at = clock_timestamp() WHERE session_id = ?", (session_id,))


def token(place, session_id) -> int:
    return place.execute("SELECT token FROM leases WHERE session_id = ?", (session_id,))[0][0]


async def test_a_session_held_elsewhere_is_refused_naming_the_holder_and_the_lease_end(place):
    async with place(holder="host-a:1") as first, place() as second:
        await first.create_session(SessionInfo("s1"), [said("hello")])
        before = datetime.datetime.now(datetime.UTC)
        with pytest.raises(
            SessionHeld, match=r"session 's1' is held by host-a:1, whose lease ends at "
        ) as held:
            await second.load_state("s1")
        assert held.value.holder == "host-a:1"
        assert before < held.value.expires_at < before + datetime.timedelta(seconds=5)
        # Through a Runtime: refused when opened, not at its first write.
        async with Runtime(second) as rt:
            with pytest.raises(SessionHeld):
                await rt.create(AgentSpec("a", ScriptedModel([])), "s1")
            assert "s1" not in rt.registry
        # Reading needs no lease.
        assert texts((await second.load_session("s1"))[1]) == ["hello"]
        with pytest.raises(SessionNotFound):
            await second.append("s1", [said("not mine")])


async def test_release_and_close_hand_the_session_over(place):
    async with place() as first:
        await first.create_session(SessionInfo("s1"))
        async with place() as second:
            await first.append("s1", [said("first")])
            await first.release("s1")
            await second.load_state("s1")
            await second.append("s1", [said("second")])
        # Closing released it.
        await first.load_state("s1")
        await first.append("s1", [said("first again")])
        assert texts((await first.load_session("s1"))[1]) == ["first", "second", "first again"]
    assert token(place, "s1") == 3


async def test_a_session_held_elsewhere_cannot_be_deleted(place):
    async with place(holder="host-a:1") as holder, place() as other:
        await holder.create_session(SessionInfo("s1"), [said("keep me")])
        with pytest.raises(SessionHeld, match="held by host-a:1"):
            await other.delete_session("s1")
        await holder.release("s1")
        await other.delete_session("s1")
        assert await other.list_sessions() == []


async def test_a_held_lease_is_renewed_past_its_length(place):
    async with place(lease=0.6) as holder, place() as other:
        await holder.create_session(SessionInfo("s1"))
        await trio.sleep(2.0)  # over three leases
        with pytest.raises(SessionHeld):
            await other.acquire("s1")
        assert not holder.lease("s1").lost.is_set()


async def test_a_takeover_refuses_every_later_write_of_the_former_holder(place):
    async with place() as former, place() as taker:
        await former.create_session(SessionInfo("s1"), [said("before")])
        await former.create_session(SessionInfo("s2"))
        end_lease(place, "s1")
        taken = await taker.acquire("s1")
        assert (taken.token, token(place, "s1")) == (2, 2)
        # The former holder does not know yet: its appends are taken, and
        # refused at the commit, while its other session's go through.
        await former.append("s1", [said("after the takeover")])
        await former.append("s2", [said("still mine")])
        with pytest.raises(LeaseLost, match="session 's1' was taken over by another store"):
            await former.sync("s1")
        await former.sync("s2")
        assert former.lease("s1").lost.is_set()
        # Known lost: appends and snapshots are refused, and every sync says so.
        await former.append("s1", [said("again")])
        await former.save_snapshot("s1", (await taker.load_state("s1")).state)
        with pytest.raises(LeaseLost):
            await former.sync("s1")
        await taker.append("s1", [said("taker")])
        await taker.sync("s1")
    assert texts(place.stored_records("s1")) == ["before", "taker"]
    assert place.execute("SELECT count(*) FROM snapshots") == [(0,)]
    assert texts(place.stored_records("s2")) == ["still mine"]


async def test_renewal_finds_a_lost_lease_without_a_write(place):
    async with place(lease=0.3) as former, place() as taker:
        await former.create_session(SessionInfo("s1"))
        end_lease(place, "s1")
        await taker.acquire("s1")
        with trio.fail_after(5):
            await former.lease("s1").lost.wait()
        assert isinstance(former.lease("s1").error, LeaseLost)
        # Taking it back is refused while the taker holds it.
        with pytest.raises(SessionHeld):
            await former.load_state("s1")


async def test_acquire_can_wait_for_the_holder_to_let_go(place):
    async with place() as holder, place() as waiter:
        await holder.create_session(SessionInfo("s1"))
        acquired = []

        async def wait_for_it():
            acquired.append(await waiter.acquire("s1", wait=True))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_for_it)
            await trio.sleep(0.5)
            assert acquired == []
            await holder.release("s1")
        assert acquired[0].token == 2


async def test_an_agent_whose_session_was_taken_over_ends_its_run_and_writes_nothing_more(place):
    started, release = trio.Event(), trio.Event()

    async def block(args, ctx):
        started.set()
        await release.wait()
        return "released"

    tools = [Tool("block", "Blocks.", {"type": "object", "properties": {}}, block)]
    model = ScriptedModel([calls(("block", {})), say("never said")])
    async with place() as taker, Runtime(place()) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=tools), "s1")
        results = []

        async def run():
            results.append(await agent.run("go"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await started.wait()
            end_lease(place, "s1")
            await taker.acquire("s1")
            release.set()
        (result,) = results
        assert result.stop_reason == "error"
        assert result.error.startswith("LeaseLost: session 's1' was taken over"), result.error
        # The runtime goes on.
        other = await rt.create(AgentSpec("b", ScriptedModel([say("fine")])), "s2")
        assert (await other.run("hi")).stop_reason == "completed"
    records = place.stored_records("s1")
    # The journal ends where the takeover found it: the tool had started.
    assert isinstance(records[-1], ToolCallStarted)


async def test_a_lost_lease_stops_the_agents_tools_at_once(place):
    started, cancelled = trio.Event(), trio.Event()

    async def block(args, ctx):
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    tools = [Tool("block", "Blocks.", {"type": "object", "properties": {}}, block)]
    model = ScriptedModel([calls(("block", {})), say("never said")])
    async with place() as taker, Runtime(place()) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=tools), "s1")
        async with agent.subscribe() as events:
            results = []

            async def run():
                results.append(await agent.run("go"))

            with trio.fail_after(30):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(run)
                    await started.wait()
                    end_lease(place, "s1")
                    await taker.acquire("s1")
                    # Nothing releases the tool: the agent's own store finds the
                    # lease lost at its next renewal, and that cancels the tool.
                    await cancelled.wait()
            seen = [events.receive_nowait() for _ in range(len(events))]
        # The turn cannot be closed in a journal the agent no longer owns (the
        # new holder's repair closes it): the run ends in error.
        ends = [(e.type, e.stop_reason) for e in seen if e.type in ("turn_end", "agent_end")]
        assert ends == [("agent_end", "error")]
        (result,) = results
        assert result.stop_reason == "error"
        assert result.error.startswith("LeaseLost: session 's1' was taken over"), result.error
    assert isinstance(place.stored_records("s1")[-1], ToolCallStarted)


@pytest.mark.parametrize("lease", [0, -1, float("nan"), float("inf")])
async def test_the_lease_must_be_a_positive_number_of_seconds(place, lease):
    with pytest.raises(ValueError, match="lease must be a positive number of seconds"):
        place(lease=lease)
