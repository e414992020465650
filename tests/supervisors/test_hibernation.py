"""Idle agents hibernate: no task, nursery or mailbox until they are used."""

import gc
import tracemalloc
from contextlib import asynccontextmanager

import pytest
import trio
import trio.lowlevel

from agentrio import AgentDisposed, AgentSpec, Runtime, ScriptedModel, SQLiteStore, Tool, UserMessage
from agentrio.actors import agent as agent_module

from ..conftest import record
from ..helpers import calls, echo_tool, say


def _tasks() -> int:
    """Every trio task alive now."""
    count, nurseries = 0, list(trio.lowlevel.current_root_task().child_nurseries)
    while nurseries:
        for task in nurseries.pop().child_tasks:
            count += 1
            nurseries.extend(task.child_nurseries)
    return count + 1


class _Spawns(trio.abc.Instrument):
    """Counts the tasks spawned while it is on."""

    def __init__(self) -> None:
        self.spawned = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawned += 1


@asynccontextmanager
async def _counting_spawns():
    spawns = _Spawns()
    trio.lowlevel.add_instrument(spawns)
    try:
        yield spawns
    finally:
        trio.lowlevel.remove_instrument(spawns)


def _spec(*replies, name="a"):
    return AgentSpec(name, ScriptedModel(list(replies)))


async def _asleep(agent) -> None:
    """Let the agent's actor end (it hibernates at once when idle)."""
    while not agent.hibernating:
        await trio.lowlevel.checkpoint()


# -- when an agent hibernates ---------------------------------------------------


async def test_a_new_agent_is_created_hibernating_with_no_task():
    async with Runtime() as rt:
        before = _tasks()
        agents = [await rt.create(_spec()) for _ in range(20)]
        assert _tasks() == before
        assert all(agent.hibernating and agent.status == "idle" for agent in agents)
        assert len(rt.registry) == 20


async def test_an_idle_agent_hibernates_after_hibernate_after(autojump_clock):
    async with Runtime(hibernate_after=5.0) as rt:
        before = _tasks()
        agent = await rt.create(_spec(say("one"), say("two")))
        assert (await agent.run("go")).stop_reason == "completed"
        assert not agent.hibernating and _tasks() == before + 1  # the actor task, awake
        await trio.sleep(4.9)
        assert not agent.hibernating
        # Used again before the countdown ended: the countdown starts again
        # once the agent is idle.
        assert (await agent.run("again")).stop_reason == "completed"
        await trio.sleep(4.9)
        assert not agent.hibernating
        await trio.sleep(0.2)
        assert agent.hibernating and _tasks() == before
        assert [m.text for m in agent.messages if m.role == "assistant"] == ["one", "two"]


async def test_a_running_agent_does_not_hibernate(autojump_clock):
    release = trio.Event()

    async def slow(args, ctx):
        await release.wait()
        return "ok"

    async with Runtime(hibernate_after=0.5) as rt:
        agent = await rt.create(
            AgentSpec(
                "slow",
                ScriptedModel([calls(("slow", {})), say("done")]),
                tools=[Tool("slow", "", {"type": "object"}, slow)],
            )
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.run, "go")
            await trio.sleep(30)  # the tool runs for 30 s: far past hibernate_after
            assert not agent.hibernating and agent.status == "running"
            release.set()
        await trio.sleep(0.4)
        assert not agent.hibernating
        await trio.sleep(0.2)
        assert agent.hibernating


async def test_without_hibernate_after_agents_keep_their_task(autojump_clock):
    async with Runtime(hibernate_after=None) as rt:
        before = _tasks()
        agent = await rt.create(_spec())
        await trio.sleep(3600)
        assert not agent.hibernating and _tasks() == before + 1


async def test_an_agent_with_a_setup_scope_never_hibernates(autojump_clock):
    opened = []

    @asynccontextmanager
    async def resource():
        opened.append("open")
        yield
        opened.append("closed")

    async def setup(agent, scope):
        await scope.enter_async_context(resource())

    async with Runtime(hibernate_after=0) as rt:
        before = _tasks()
        agent = await rt.create(_spec(say("ok")), setup=setup)
        assert (await agent.run("go")).stop_reason == "completed"
        await trio.sleep(3600)
        # What setup opened lives as long as the agent's task: both are still there.
        assert opened == ["open"] and not agent.hibernating and _tasks() > before
    assert opened == ["open", "closed"]


@pytest.mark.parametrize("value", [-1, "1", float("nan")])
def test_hibernate_after_must_be_seconds_or_none(value):
    with pytest.raises(ValueError, match="hibernate_after"):
        Runtime(hibernate_after=value)


async def test_a_hibernating_agent_holds_under_2_kb():
    spec = _spec()
    async with Runtime() as rt:
        await rt.create(spec)  # caches warm
        gc.collect()
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            agents = [await rt.create(spec) for _ in range(200)]
            gc.collect()
            held = (tracemalloc.get_traced_memory()[0] - start) / len(agents)
        finally:
            tracemalloc.stop()
        assert all(agent.hibernating for agent in agents)
        assert held <= 2048, held


# -- every use wakes it ----------------------------------------------------------


async def _use(agent, operation):
    """Do ``operation`` on ``agent``; return what it says (checked below)."""
    match operation:
        case "run":
            return (await agent.run("hi")).stop_reason
        case "stream":
            async with agent.stream("hi") as run:
                types = [event.type async for event in run]
            return run.result.stop_reason, types[-1]
        case "steer" | "followup":
            await getattr(agent, operation)("hi")
            await agent.wait_idle()
            return agent.messages[-1].text
        case "inject":
            queued = await agent.inject("context")
            return [q.id for q in agent.pending_input] == [queued.id]
        case "withdraw":
            queued = await agent.inject("context")
            await _asleep(agent)
            return await agent.withdraw(queued.id), agent.pending_input
        case "replace":
            queued = await agent.inject("context")
            await _asleep(agent)
            return await agent.replace(queued.id, "better"), agent.pending_input[0].message.text
        case "rename":
            await agent.rename("a title")
            return agent.title
        case "set_goal":
            await agent.set_goal("say ok", max_turns=1)
            await agent.wait_idle()
            return agent.messages[-1].text
        case "run_maintenance":
            return await agent.run_maintenance(lambda: _answer(42))
        case "compact":
            return (await agent.compact()).compacted
        case "answer":
            with pytest.raises(LookupError, match="no pending approval"):
                await agent.answer("approval_x", "approve")
            return "refused"
        case "resume":
            await agent.inject("context")  # queued, not started
            await _asleep(agent)
            await agent.resume()  # input to start: that needs the actor
            await agent.wait_idle()
            return agent.messages[-1].text
        case "cancel":
            await agent.inject("context")
            await _asleep(agent)
            await agent.cancel()  # discards the pending input: that needs the actor
            return agent.pending_input


async def _answer(value):
    return value


EXPECTED = {
    "run": "completed",
    "stream": ("completed", "agent_end"),
    "steer": "ok",
    "followup": "ok",
    "inject": True,
    "withdraw": (True, ()),
    "replace": (True, "better"),
    "rename": "a title",
    "set_goal": "ok",
    "run_maintenance": 42,
    "compact": False,
    "answer": "refused",
    "resume": "ok",
    "cancel": (),
}


@pytest.mark.parametrize("operation", list(EXPECTED))
async def test_every_use_of_a_hibernating_agent_wakes_it(operation):
    async with Runtime(hibernate_after=0) as rt:
        agent = await rt.create(_spec(*[say("ok")] * 3))
        assert agent.hibernating
        async with _counting_spawns() as spawns:
            assert await _use(agent, operation) == EXPECTED[operation]
        assert spawns.spawned >= 1  # its actor task, at least
        await _asleep(agent)  # and it sleeps again once idle
        assert (await agent.run("and again")).stop_reason == "completed"


async def test_reading_a_hibernating_agent_does_not_wake_it():
    async with Runtime(hibernate_after=0) as rt:
        agent = await rt.create(_spec(say("ok")))
        await agent.run("hi")
        await _asleep(agent)
        async with _counting_spawns() as spawns:
            assert agent.status == "idle"
            assert [m.text for m in agent.messages] == ["hi", "ok"]
            assert agent.usage is not None and agent.title is None
            assert agent.pending_input == () and agent.pending_approvals == ()
            assert agent.running_tools == () and agent.children() == ()
            assert agent.failed is None and agent.tools == {}
            await agent.wait_idle()
            await agent.resume()  # nothing to resume
            await agent.cancel(keep_inbox=True)  # nothing to stop
            async with agent.subscribe():
                pass
        assert spawns.spawned == 0 and agent.hibernating


async def test_tools_given_to_a_hibernating_agent_stay():
    async with Runtime(hibernate_after=0) as rt:
        agent = await rt.create(_spec(calls(("echo", {"text": "x"})), say("done")))
        agent.tools["echo"] = echo_tool()
        await _asleep(agent)
        result = await agent.run("go")
        assert result.stop_reason == "completed"
        assert not any(getattr(m, "is_error", False) for m in agent.messages)


# -- events, children, teardown -----------------------------------------------------


async def test_a_subscriber_sees_every_event_from_the_wake_up_on():
    async with Runtime(hibernate_after=0) as rt:
        agent = await rt.create(_spec(say("one"), say("two")))
        async with record(agent) as first:
            await agent.run("go")
        await _asleep(agent)
        last_seq = first.events[-1].seq
        # Subscribed while it hibernates: subscribing does not wake it...
        async with record(agent) as rec:
            await trio.lowlevel.checkpoint()
            assert agent.hibernating and rec.events == []
            # ...and the next use does: every event of the run, numbered on.
            await agent.run("again")
            await agent.wait_idle()
            await trio.lowlevel.checkpoint()
        types = rec.types()
        assert types[0] == "agent_start" and types[-1] == "agent_end"
        seqs = [event.seq for event in rec.events]
        assert seqs == list(range(last_seq + 1, last_seq + 1 + len(seqs)))
        assert rec.of("message_end")[-1].message.text == "two"


async def test_a_child_wakes_its_parent_and_the_parent_sleeps_after_it():
    async with Runtime(hibernate_after=0) as rt:
        before = _tasks()
        parent = await rt.create(_spec(name="parent"))
        child = await rt.create(_spec(say("from the child"), name="child"), parent=parent)
        assert parent.hibernating and child.hibernating and _tasks() == before
        assert (await child.run("go")).stop_reason == "completed"
        # The child's actor ran in its parent's nursery: the parent woke first.
        assert child.messages[-1].text == "from the child"
        await _asleep(child)
        await _asleep(parent)
        assert _tasks() == before
        assert rt.registry.children(parent.id) == (child,)


async def test_a_parent_stays_awake_while_a_child_is_awake(autojump_clock):
    async with Runtime(hibernate_after=1.0) as rt:
        parent = await rt.create(_spec(name="parent"))
        child = await rt.create(_spec(name="child"), parent=parent)
        await child.rename("awake")
        assert not parent.hibernating and not child.hibernating
        await trio.sleep(0.5)
        await child.rename("still awake")  # the child's countdown starts again; the parent waits for it
        await trio.sleep(0.9)
        assert not parent.hibernating
        await trio.sleep(0.2)
        assert child.hibernating
        await trio.sleep(1.1)
        assert parent.hibernating


async def test_disposing_a_hibernating_agent_does_not_wake_it():
    async with Runtime(hibernate_after=0) as rt:
        parent = await rt.create(_spec(name="parent"))
        child = await rt.create(_spec(name="child"), parent=parent)
        async with record(parent) as rec, _counting_spawns() as spawns:
            await parent.dispose()
        assert spawns.spawned == 0
        assert rt.registry.get(parent.id) is None and rt.registry.get(child.id) is None
        assert not parent.hibernating and not child.hibernating  # disposed
        assert rec.events == []  # its subscription ended
        with pytest.raises(AgentDisposed):
            await parent.run("hi")
        with pytest.raises(AgentDisposed):
            await child.steer("hi")
        await child.cancel()  # nothing to cancel: no error


async def test_leaving_the_runtime_disposes_hibernating_agents_without_waking_them():
    ended = []
    async with _counting_spawns() as spawns:
        async with Runtime(hibernate_after=0) as rt:
            agents = [await rt.create(_spec(say("ok"))) for _ in range(5)]
            await agents[2].run("hi")
            await _asleep(agents[2])
            rt.registry.listen(
                lambda event: ended.append(event.agent_id) if event.type == "agent_ended" else None
            )
            before_exit = spawns.spawned
        assert spawns.spawned == before_exit
    assert ended == [agent.id for agent in reversed(agents)]
    assert len(rt.registry) == 0


async def test_a_failure_while_waking_fails_that_agent_alone(monkeypatch):
    async with Runtime(hibernate_after=0) as rt:
        failing = await rt.create(_spec(name="failing"))
        other = await rt.create(_spec(say("fine"), name="other"))
        real_mailbox = agent_module.Mailbox

        def mailbox(capacity, name):
            if failing.id in name:
                raise OSError("no room to wake")
            return real_mailbox(capacity, name)

        monkeypatch.setattr(agent_module, "Mailbox", mailbox)
        async with rt.subscribe() as lifecycle, record(failing) as rec:
            with pytest.raises(OSError, match="no room to wake"):
                await failing.run("hi")
            with pytest.raises(AgentDisposed):
                await failing.run("hi")
            assert failing.failed == "OSError: no room to wake"
            assert rt.registry.get(failing.id) is None
            assert (await other.run("hi")).stop_reason == "completed"
            lifecycle.close()
            told = [(event.type, event.agent_id) async for event in lifecycle]
        assert ("agent_failed", failing.id) in told and ("agent_ended", failing.id) in told
        assert not any(agent_id == other.id for kind, agent_id in told if kind == "agent_failed")
        (failed,) = rec.of("agent_failed")
        assert failed.error == "OSError: no room to wake" and not failed.restarted


async def test_a_restored_session_is_created_hibernating_with_its_pending_input(tmp_path):
    store = SQLiteStore(tmp_path / "sessions.db")
    async with store:
        async with Runtime(store, hibernate_after=0) as rt:
            agent = await rt.create(_spec(), session_id="s1")
            await agent.inject(UserMessage("later"))
        async with Runtime(store, hibernate_after=0) as rt:
            agent = await rt.create(_spec(say("resumed")), session_id="s1")
            assert agent.hibernating
            assert [q.message.text for q in agent.pending_input] == ["later"]
            await agent.resume()  # pending input: wakes and runs it
            await agent.wait_idle()
            assert agent.messages[-1].text == "resumed"
