"""The actor shape: mailboxes, ownership, backpressure, failure isolation,
restart, nesting, and cancel meaning stopped."""

from __future__ import annotations

import gc
import os
import tracemalloc

import pytest
import trio
import trio.lowlevel

from agentrio import (
    AgentDisposed,
    AgentSpec,
    Hooks,
    Limits,
    Runtime,
    ScriptedModel,
    Tool,
    agent_tool,
)
from agentrio.actors.agent import MAILBOX_CAPACITY
from agentrio.actors.ownership import NotOwner
from agentrio.journal.records import ActorFailed, MessageAppended
from agentrio.mailbox import ActorStopped, Mailbox, MailboxClosed
from agentrio.messages import TOOL_ABORTED

from .conftest import record
from .helpers import calls, say, start_run

# -- the mailbox ---------------------------------------------------------------


async def test_a_full_mailbox_makes_senders_wait():
    mailbox: Mailbox[int] = Mailbox(2)
    await mailbox.send(1)
    await mailbox.send(2)
    with trio.move_on_after(0.01) as waited:
        await mailbox.send(3)
    assert waited.cancelled_caught
    assert [(await mailbox.receive()).message for _ in range(2)] == [1, 2]


async def test_a_call_gets_the_reply_or_the_actors_error():
    mailbox: Mailbox[str] = Mailbox(4)

    async def actor():
        async for envelope in mailbox:
            if envelope.message == "boom":
                envelope.fail(ValueError("no"))
            else:
                envelope.reply(envelope.message.upper())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor)
        assert await mailbox.call("hi") == "HI"
        with pytest.raises(ValueError, match="no"):
            await mailbox.call("boom")
        mailbox.close()


async def test_a_cancelled_caller_withdraws_its_request():
    mailbox: Mailbox[str] = Mailbox(4)
    with trio.move_on_after(0.01):
        await mailbox.call("never read")
    await mailbox.send("later")
    # The actor never sees the withdrawn request.
    assert (await mailbox.receive()).message == "later"


async def test_closing_fails_waiting_callers_and_refuses_senders():
    mailbox: Mailbox[str] = Mailbox(4)
    outcome = []

    async def caller():
        try:
            await mailbox.call("pending")
        except ActorStopped as exc:
            outcome.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(caller)
        await trio.testing.wait_all_tasks_blocked()
        mailbox.close()
    assert len(outcome) == 1
    with pytest.raises(MailboxClosed):
        await mailbox.send("late")


async def test_senders_waiting_for_room_get_it_in_the_order_they_began_to_wait():
    mailbox: Mailbox[int] = Mailbox(1)
    await mailbox.send(0)
    async with trio.open_nursery() as nursery:
        for i in (1, 2, 3):
            nursery.start_soon(mailbox.send, i)
            await trio.testing.wait_all_tasks_blocked()
        # A sender arriving now waits behind them, though a read makes room.
        assert (await mailbox.receive()).message == 0
        with pytest.raises(trio.WouldBlock):
            mailbox.send_nowait(4)
        assert [(await mailbox.receive()).message for _ in range(3)] == [1, 2, 3]
    assert len(mailbox) == 0


async def test_closing_refuses_senders_waiting_for_room_and_ends_the_reader():
    mailbox: Mailbox[int] = Mailbox(1)
    await mailbox.send(0)
    outcome = []

    async def sender():
        try:
            await mailbox.send(1)
        except MailboxClosed as exc:
            outcome.append(exc)

    async def reader():
        # Reads what is queued, then waits: closing ends the wait.
        async for _ in mailbox:
            pass
        outcome.append("read to the end")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender)
        await trio.testing.wait_all_tasks_blocked()
        mailbox.close()
        nursery.start_soon(reader)
    assert len(outcome) == 2 and "read to the end" in outcome
    assert any(isinstance(item, MailboxClosed) for item in outcome)


# -- ownership -----------------------------------------------------------------


async def test_agent_state_changes_only_in_the_agents_tasks(rt):
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("ok")])))
    # A public method called from this (foreign) task posts a message...
    await agent.inject("context")
    assert [q.message.text for q in agent.inbox.next_step] == ["context"]
    # ...while touching the inbox directly from here is caught.
    with pytest.raises(NotOwner, match="does not own"):
        await agent.inbox.put("sneaky", "next_turn")


async def test_many_steers_against_a_busy_agent_keep_memory_bounded_and_lose_nothing():
    release = trio.Event()

    async def slow(args, ctx):
        await release.wait()
        return "done"

    total = 100_000
    model = ScriptedModel([calls(("slow", {})), say("end")])
    spec = AgentSpec("a", model, tools=[Tool("slow", "", {"type": "object"}, slow)])
    async with Runtime() as rt:
        agent = await rt.create(spec)
        async with trio.open_nursery() as nursery:
            results = start_run(nursery, agent, "go")
            while agent.running_tools == ():
                await trio.lowlevel.checkpoint()
            most_waiting = 0
            tracemalloc.start()
            baseline = tracemalloc.get_traced_memory()[0]

            async def steer_many(part: int) -> None:
                nonlocal most_waiting
                for i in range(total // 10):
                    await agent.steer(f"{part}:{i}")
                    most_waiting = max(most_waiting, len(agent._mailbox))

            async with trio.open_nursery() as senders:
                for part in range(10):
                    senders.start_soon(steer_many, part)
            used = tracemalloc.get_traced_memory()[0] - baseline
            tracemalloc.stop()
            queued = agent.inbox.next_step
            release.set()
        assert results[0].stop_reason == "completed"
    # The mailbox never held more than its capacity: senders waited.
    assert most_waiting <= MAILBOX_CAPACITY
    # Every accepted input is there, in each sender's order...
    assert len(queued) == total
    for part in range(10):
        mine = [q.message.text for q in queued if q.message.text.startswith(f"{part}:")]
        assert mine == [f"{part}:{i}" for i in range(total // 10)]
    # ...and memory grew with what was accepted, not with what waited.
    assert used / total < 2_000, f"{used / total:.0f} bytes per accepted input"


async def test_an_idle_agent_gives_the_garbage_collector_little_to_walk():
    # Every full collection walks every live agent's objects: what an idle
    # agent holds is paid again and again, by every program with many agents.
    spec = AgentSpec("a", ScriptedModel([]))
    async with Runtime() as rt:
        await rt.create(spec)
        gc.collect()
        before = len(gc.get_objects())
        for _ in range(200):
            await rt.create(spec)
        gc.collect()
        per_agent = (len(gc.get_objects()) - before) / 200
    assert per_agent <= 55, f"{per_agent:.1f} tracked objects per idle agent"


# -- failure isolation and restart ---------------------------------------------


def _raising_pre_step(failures: list):
    def pre_step(step):
        failures.append(step.input[0].message.text)
        raise RuntimeError("hook bug")

    return pre_step


async def test_a_failing_agent_never_takes_the_runtime_or_its_siblings_down():
    failures: list = []
    broken = AgentSpec(
        "broken", ScriptedModel([], strict=False), hooks=Hooks(pre_step=_raising_pre_step(failures))
    )
    async with Runtime() as rt:
        bad = await rt.create(broken)
        good = [await rt.create(AgentSpec(f"g{i}", ScriptedModel([say(f"answer {i}")]))) for i in range(9)]
        outcomes = {}

        async def ask(agent, prompt, key):
            outcomes[key] = await agent.run(prompt)

        async with trio.open_nursery() as nursery:
            for n in range(100):
                nursery.start_soon(ask, bad, f"bad {n}", ("bad", n))
            for i, agent in enumerate(good):
                nursery.start_soon(ask, agent, "question", ("good", i))
    # The Runtime block exited cleanly; each good agent got its own answer.
    assert [outcomes[("good", i)].text for i in range(9)] == [f"answer {i}" for i in range(9)]
    assert all(outcomes[("good", i)].stop_reason == "completed" for i in range(9))
    bad_results = [outcomes[("bad", n)] for n in range(100)]
    assert {r.stop_reason for r in bad_results} == {"error"}
    assert all("hook bug" in r.error for r in bad_results)
    assert len(failures) == 100


async def test_on_crash_restores_the_agent_from_its_journal_and_finishes_pending_input():
    second_queued = trio.Event()
    calls_seen = []

    async def pre_step(step):
        calls_seen.append(step.input[0].message.text)
        if len(calls_seen) == 1:
            await second_queued.wait()  # "second" is pending when the agent fails
            raise RuntimeError("hook bug")

    model = ScriptedModel([say("second answered")])
    spec = AgentSpec("a", model, hooks=Hooks(pre_step=pre_step), restart="on_crash")
    async with Runtime() as rt:
        agent = await rt.create(spec)
        async with record(agent) as rec, trio.open_nursery() as nursery:
            first = start_run(nursery, agent, "first")
            while not calls_seen:
                await trio.lowlevel.checkpoint()
            second = start_run(nursery, agent, "second")
            while not agent.inbox.next_turn:
                await trio.lowlevel.checkpoint()
            second_queued.set()
        records = (await rt.store.load_session(agent.session_id))[1]
    assert calls_seen == ["first", "second"]
    assert first[0].stop_reason == "error" and "hook bug" in first[0].error
    assert second[0].stop_reason == "completed" and second[0].text == "second answered"
    assert [(e.restarted, e.escalated) for e in rec.of("agent_failed")] == [(True, False)]
    assert [r.restarted for r in records if isinstance(r, ActorFailed)] == [True]
    # The failure came between the two runs.
    types = [e.type for e in rec.events if e.type in ("agent_end", "agent_failed", "agent_start")]
    assert types == ["agent_start", "agent_end", "agent_failed", "agent_start", "agent_end"]


async def test_past_its_restart_intensity_the_agent_stops_for_good_and_alone():
    all_queued = trio.Event()

    async def pre_step(step):
        await all_queued.wait()
        raise RuntimeError("hook bug")

    spec = AgentSpec(
        "a",
        ScriptedModel([], strict=False),
        hooks=Hooks(pre_step=pre_step),
        restart="on_crash",
        restart_intensity=(2, 60.0),
    )
    async with Runtime() as rt:
        agent = await rt.create(spec)
        bystander = await rt.create(AgentSpec("b", ScriptedModel([say("fine")])))
        async with record(agent) as rec, trio.open_nursery() as nursery:
            runs = [start_run(nursery, agent, f"p{i}") for i in range(4)]
            while len(agent.inbox.next_turn) < 3:
                await trio.lowlevel.checkpoint()
            all_queued.set()
        assert [e.restarted for e in rec.of("agent_failed")] == [True, True, False]
        assert rec.of("agent_failed")[-1].escalated
        assert agent.failed is not None and "hook bug" in agent.failed
        # Three runs failed; the fourth prompt, never run, is answered too.
        assert [r[0].stop_reason for r in runs] == ["error"] * 4
        with pytest.raises(AgentDisposed):
            await agent.run("again")
        assert (await bystander.run("still there?")).text == "fine"


# -- the supervision tree ------------------------------------------------------


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[1][0] != "Z"


def _task_names() -> list[str]:
    names, pending = [], [trio.lowlevel.current_root_task()]
    while pending:
        task = pending.pop()
        names.append(task.name)
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return names


async def test_cancelling_a_parent_stops_a_grandchilds_subprocess_structurally(tmp_path):
    pid_file = tmp_path / "pid"
    started = trio.Event()

    async def shell(args, ctx):
        async with trio.open_nursery() as nursery:

            async def watch():
                while not pid_file.exists() or not pid_file.read_text().strip():
                    await trio.sleep(0.01)
                started.set()

            nursery.start_soon(watch)
            await ctx.run_process(f"echo $$ > {pid_file}; exec sleep 60", timeout=120)
        return "finished"

    grandchild = AgentSpec(
        "grandchild",
        ScriptedModel([calls(("shell", {})), say("never")]),
        tools=[Tool("shell", "", {"type": "object"}, shell)],
    )
    child = AgentSpec(
        "child",
        ScriptedModel([calls(("delegate", {"task": "run it"})), say("never")]),
        tools=[agent_tool(grandchild, name="delegate", description="")],
    )
    parent = AgentSpec(
        "parent",
        ScriptedModel([calls(("delegate", {"task": "go deeper"})), say("after")]),
        tools=[agent_tool(child, name="delegate", description="")],
    )
    async with Runtime() as rt:
        before = sorted(_task_names())
        agent = await rt.create(parent)
        async with trio.open_nursery() as nursery:
            results = start_run(nursery, agent, "go")
            await started.wait()
            pid = int(pid_file.read_text())
            (kid,) = agent.children()
            (grandkid,) = kid.children()
            # The tree of agents is the tree of nurseries.
            assert rt.registry.path(grandkid.id) == [agent.id, kid.id, grandkid.id]
            cancelled_at = trio.current_time()
            await agent.cancel()
            await agent.wait_idle()
            took = trio.current_time() - cancelled_at
        assert not _pid_alive(pid)
        assert took < 1.0
        assert results[0].stop_reason == "aborted"
        assert agent.messages[-1].text.startswith(TOOL_ABORTED)
        assert agent.children() == () and agent.running_tools == ()
        await agent.dispose()
        # Nothing of the three agents is left running.
        assert sorted(_task_names()) == before


# -- cancel means stopped --------------------------------------------------------


async def test_wait_idle_returns_only_when_a_process_that_ignores_sigterm_is_dead(tmp_path):
    pid_file = tmp_path / "pid"

    async def stubborn(args, ctx):
        await ctx.run_process(
            f"trap '' TERM; echo $$ > {pid_file}; while true; do sleep 0.05; done", grace=0.5
        )
        return "never"

    model = ScriptedModel([calls(("stubborn", {})), say("after")])
    async with Runtime() as rt:
        agent = await rt.create(
            AgentSpec("a", model, tools=[Tool("stubborn", "", {"type": "object"}, stubborn)])
        )
        async with trio.open_nursery() as nursery:
            start_run(nursery, agent, "go")
            while not pid_file.exists() or not pid_file.read_text().strip():
                await trio.sleep(0.01)
            pid = int(pid_file.read_text())
            await agent.cancel()
            await agent.wait_idle()
            # History says aborted only once it is true.
            assert not _pid_alive(pid)
            assert agent.messages[-1].text.startswith(TOOL_ABORTED)
            assert agent.running_tools == ()


# -- commit timing -------------------------------------------------------------


async def test_a_result_first_in_model_order_is_committed_before_later_calls_finish(rt):
    release = trio.Event()
    order = []

    async def fast(args, ctx):
        return "fast"

    async def slow(args, ctx):
        await release.wait()
        order.append("slow finished")
        return "slow"

    tools = [Tool("fast", "", {"type": "object"}, fast), Tool("slow", "", {"type": "object"}, slow)]
    agent = await rt.create(
        AgentSpec("a", ScriptedModel([calls(("fast", {}), ("slow", {})), say("end")]), tools=tools)
    )
    async with record(agent) as rec, trio.open_nursery() as nursery:
        start_run(nursery, agent, "go")
        while not rec.of("tool_execution_end"):
            await trio.lowlevel.checkpoint()
        order.append("fast committed")
        # Durable too: the store already holds it as a message.
        records = (await rt.store.load_session(agent.session_id))[1]
        assert [
            r.message.tool_name
            for r in records
            if isinstance(r, MessageAppended) and r.message.role == "tool_result"
        ] == ["fast"]
        release.set()
    assert order == ["fast committed", "slow finished"]
    assert [e.tool_name for e in rec.of("tool_execution_end")] == ["fast", "slow"]


# -- validation at the edges ----------------------------------------------------


def test_a_spec_with_a_dict_for_limits_names_the_field():
    with pytest.raises(
        TypeError, match=r"AgentSpec.limits: expected a Limits — write Limits\(max_turns=...\)"
    ):
        AgentSpec("a", ScriptedModel([]), limits={"max_turns": 3})


def test_a_plain_function_as_a_tool_says_to_decorate_it():
    def f(x: int) -> str:
        return str(x)

    with pytest.raises(
        TypeError,
        match=r"AgentSpec.tools\[0\]: expected a Tool — decorate the function with @tool — got function 'f'",
    ):
        AgentSpec("a", ScriptedModel([]), tools=[f])


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"max_turns": "10"}, TypeError, r"Limits.max_turns: expected a positive int or None, got '10'"),
        ({"max_turns": 0}, ValueError, r"Limits.max_turns: expected a positive int or None, got 0"),
        ({"max_turns": True}, TypeError, r"Limits.max_turns"),
        ({"timeout": "soon"}, TypeError, r"Limits.timeout: expected seconds"),
        (
            {"max_parallel_tool_calls": None},
            TypeError,
            r"Limits.max_parallel_tool_calls: expected a positive int",
        ),
    ],
)
def test_limits_name_the_field_the_expected_type_and_the_value(fields, error, message):
    with pytest.raises(error, match=message):
        Limits(**fields)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": 5}, r"AgentSpec.name: expected a str"),
        ({"model": object()}, r"AgentSpec.model: expected a model"),
        ({"hooks": {"pre_step": print}}, r"AgentSpec.hooks: expected a Hooks or None"),
        ({"permission": "allow"}, r"AgentSpec.permission: expected a function or None"),
        ({"middleware": [42]}, r"AgentSpec.middleware\[0\]: expected an async function"),
        ({"restart": "always"}, r"AgentSpec.restart: expected one of"),
        ({"tools": "read"}, r"AgentSpec.tools: expected a list or tuple"),
    ],
)
def test_a_spec_names_each_wrong_field(fields, message):
    arguments = {"name": "a", "model": ScriptedModel([]), **fields}
    name, model = arguments.pop("name"), arguments.pop("model")
    with pytest.raises((TypeError, ValueError), match=message):
        AgentSpec(name, model, **arguments)


def test_hooks_must_be_functions():
    with pytest.raises(
        TypeError, match=r"Hooks.pre_step: expected a function, a list of functions or None, got 'x'"
    ):
        Hooks(pre_step="x")


async def test_a_run_whose_journal_refuses_to_close_it_still_ends_and_says_why():
    from agentrio import MemoryStore, StoreError

    class FailingStore(MemoryStore):
        failing = False

        async def sync(self, session_id):
            if self.failing:
                raise StoreError("the lease on this session was lost")
            await super().sync(session_id)

    started = trio.Event()

    async def wait(args, ctx):
        started.set()
        await trio.sleep_forever()

    store = FailingStore()
    model = ScriptedModel([calls(("wait", {}))])
    async with Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[Tool("wait", "", {"type": "object"}, wait)]))
        async with record(agent) as rec, trio.open_nursery() as nursery:
            results = start_run(nursery, agent, "go")
            await started.wait()
            store.failing = True
            await agent.cancel()
    assert results[0].stop_reason == "error"
    assert "StoreError: the lease on this session was lost" in results[0].error
    assert rec.of("agent_end")[-1].stop_reason == "error"


async def test_send_and_call_are_checkpoints_whether_or_not_they_wait():
    mailbox: Mailbox[int] = Mailbox(4)
    with trio.testing.assert_checkpoints():
        await mailbox.send(1)  # room at once: still a schedule point
    with trio.CancelScope() as scope:
        scope.cancel()
        await mailbox.send(2)
    assert scope.cancelled_caught and len(mailbox) == 1  # a cancelled sender posts nothing

    async def actor():
        async for envelope in mailbox:
            envelope.reply(envelope.message * 10)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor)
        with trio.testing.assert_checkpoints():
            assert await mailbox.call(3) == 30
        nursery.cancel_scope.cancel()


async def test_an_activity_that_fails_before_taking_input_is_not_started_again_and_again(rt, monkeypatch):
    """A bug that fails every activity before it claims its input must not
    turn into a loop of activities: the waiting runs end with the error,
    the input stays queued, and nothing starts until the agent is woken."""
    from agentrio.actors.activity import Activity

    started = []

    async def broken(self):
        started.append(trio.current_time())
        raise RuntimeError("a bug before the turn")

    monkeypatch.setattr(Activity, "execute", broken)
    agent = await rt.create(AgentSpec("a", ScriptedModel([])))
    await agent.followup("queued first")
    with trio.fail_after(5):
        result = await agent.run("then this")
    assert result.stop_reason == "error" and "a bug before the turn" in result.error
    assert len(started) == 2  # one activity for each input that woke the agent
    await trio.sleep(0.2)
    assert len(started) == 2
    assert [q.message.text for q in agent.inbox.next_turn] == ["queued first", "then this"]
