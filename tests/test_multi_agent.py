"""Parent and child agents, create/teardown order, and initiators."""

from contextlib import asynccontextmanager

import pytest
import trio
import trio.lowlevel

from agentrio import (
    AgentSpec,
    Initiator,
    MemoryStore,
    ProviderError,
    Runtime,
    ScriptedModel,
    SessionHeld,
    SQLiteStore,
    Tool,
    ToolResultMessage,
    Usage,
    agent_tool,
    current_initiator,
    tool,
    without_initiator,
)

from .conftest import Recorder, record
from .helpers import calls, say, sleeper, start_run


def _worker_spec(*replies, tools=()):
    return AgentSpec("worker", ScriptedModel(list(replies)), tools=tools)


def _results(agent):
    return [m for m in agent.messages if isinstance(m, ToolResultMessage)]


async def test_a_child_runs_the_task_and_its_text_is_the_result(rt):
    worker = _worker_spec(say("the answer is 42", usage=Usage(30, 5)))
    lead = AgentSpec(
        "lead",
        ScriptedModel(
            [
                calls(("ask_worker", {"task": "compute it"}), usage=Usage(10, 2)),
                say("done", usage=Usage(20, 1)),
            ]
        ),
        tools=[agent_tool(worker, name="ask_worker", description="Delegate a task.")],
    )
    parent = await rt.create(lead)
    async with record(parent) as rec:
        result = await parent.run("go")
    (answer,) = _results(parent)
    assert answer.text == "the answer is 42" and not answer.is_error
    assert result.usage == Usage(60, 8)  # the child's usage rolls up into the parent's run
    assert parent.usage == Usage(30, 3)  # the parent's session counts its own model calls
    forwarded = rec.of("child_event")
    child_id = answer.details["agent_id"]
    assert {e.child_id for e in forwarded} == {child_id}
    assert all(e.path == [child_id] and e.names == ["worker"] for e in forwarded)
    inner = [e.event.type for e in forwarded]
    assert inner[0] == "inbox" and "agent_end" in inner
    assert worker.model.requests[0].messages[-1].text == "compute it"
    assert rt.registry.get(child_id) is None  # disposed when the call ended


async def test_children_are_registered_under_the_caller_while_they_run(rt):
    seen = {}

    async def slow_reply(request):
        parent_id = next(a.parent_id for a in rt.registry.agents if a.spec.name == "worker")
        seen["children"] = [a.spec.name for a in rt.registry.children(parent_id)]
        seen["path"] = rt.registry.path(rt.registry.children(parent_id)[0].id)
        return say("ok")

    lead = AgentSpec(
        "lead",
        ScriptedModel([calls(("ask", {"task": "t"})), say("done")]),
        tools=[agent_tool(_worker_spec(slow_reply), name="ask", description="")],
    )
    parent = await rt.create(lead)
    await parent.run("go")
    assert seen["children"] == ["worker"]
    assert seen["path"][0] == parent.id and len(seen["path"]) == 2
    assert rt.registry.children(parent.id) == ()


async def test_children_run_in_parallel_under_the_parents_pool(rt, autojump_clock):
    log = []

    def worker(tag):
        return calls(("sleep", {"seconds": 5, "tag": tag}))

    workers = AgentSpec(
        "worker",
        ScriptedModel([worker("a"), worker("b"), say("a done"), say("b done")]),
        tools=[sleeper(log=log)],
    )
    lead = AgentSpec(
        "lead",
        ScriptedModel([calls(("ask", {"task": "one"}), ("ask", {"task": "two"})), say("both done")]),
        tools=[agent_tool(workers, name="ask", description="")],
    )
    parent = await rt.create(lead)
    start = trio.current_time()
    await parent.run("go")
    assert trio.current_time() - start == pytest.approx(5)  # not 10: the two children overlapped
    assert sorted(r.text for r in _results(parent)) == ["a done", "b done"]


async def test_nested_children_are_forwarded_with_their_path(rt):
    grandchild = _worker_spec(say("deep"))
    child = AgentSpec(
        "middle",
        ScriptedModel([calls(("deeper", {"task": "x"})), say("middle done")]),
        tools=[agent_tool(grandchild, name="deeper", description="")],
    )
    lead = AgentSpec(
        "lead",
        ScriptedModel([calls(("ask", {"task": "y"})), say("top done")]),
        tools=[agent_tool(child, name="ask", description="")],
    )
    parent = await rt.create(lead)
    async with record(parent) as rec:
        await parent.run("go")
    paths = {tuple(e.path) for e in rec.of("child_event")}
    assert len(paths) == 2
    short, long = sorted(paths, key=len)
    assert len(long) == 2 and long[0] == short[0]
    assert {tuple(e.names) for e in rec.of("child_event")} == {("middle",), ("middle", "worker")}
    deep_end = [e for e in rec.of("child_event") if len(e.path) == 2 and e.event.type == "agent_end"]
    assert deep_end and deep_end[0].event.agent_id == long[1]


async def test_a_failing_child_is_an_error_result_not_a_crash(rt):
    broken = _worker_spec(ProviderError(401, "authentication_error", "bad key"))
    lead = AgentSpec(
        "lead",
        ScriptedModel([calls(("ask", {"task": "t"})), say("I'll do it myself")]),
        tools=[agent_tool(broken, name="ask", description="")],
    )
    parent = await rt.create(lead)
    result = await parent.run("go")
    (failure,) = _results(parent)
    assert failure.is_error
    assert (
        failure.text == "the sub-agent stopped early (model_error: HTTP 401 authentication_error: bad key)."
    )
    assert result.stop_reason == "completed"


async def test_cancelling_the_parent_cancels_its_children(rt):
    started = trio.Event()
    running = set()

    async def forever(args, ctx):
        running.add(ctx.tool_call_id)
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            running.discard(ctx.tool_call_id)

    worker = _worker_spec(calls(("forever", {})), tools=[Tool("forever", "", {"type": "object"}, forever)])
    lead = AgentSpec(
        "lead",
        ScriptedModel([calls(("ask", {"task": "t"})), say("after")]),
        tools=[agent_tool(worker, name="ask", description="")],
    )
    parent = await rt.create(lead)
    async with record(parent) as rec, trio.open_nursery() as nursery:
        results = start_run(nursery, parent, "go")
        await started.wait()
        (child,) = rt.registry.children(parent.id)
        async with record(child) as child_rec:
            await parent.cancel()
            await parent.wait_idle()
    assert results[0].stop_reason == "aborted"
    assert running == set()
    assert rt.registry.children(parent.id) == ()
    assert child_rec.of("agent_end")[-1].stop_reason == "aborted"
    assert child._stopped.is_set()
    ends = [e for e in rec.of("child_event") if e.event.type == "turn_end"]
    assert ends[-1].event.stop_reason == "aborted"


# -- create and teardown -----------------------------------------------------


async def test_setup_runs_before_the_agent_is_published_and_lives_with_it():
    log = []

    @asynccontextmanager
    async def resource(name):
        log.append(f"open {name}")
        try:
            yield name
        finally:
            log.append(f"close {name}")

    async def setup(agent, scope):
        log.append(f"setup sees status {agent.status}")
        await scope.enter_async_context(resource("db"))

        async def heartbeat():
            log.append(f"heartbeat initiator {current_initiator()}")
            await trio.sleep_forever()

        scope.nursery.start_soon(heartbeat)

    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("hi")])), setup=setup)
        assert rt.registry.get(agent.id) is agent
        await agent.run("hello")
        await trio.lowlevel.checkpoint()
        log.append("runtime exiting")
    assert log == [
        "setup sees status idle",
        "open db",
        "heartbeat initiator None",
        "runtime exiting",
        "close db",
    ]


async def test_a_setup_commit_runs_last_before_publishing_and_its_failure_fails_the_creation(rt):
    log = []

    def setup_with(commit):
        async def setup(agent, scope):
            log.append("setup")
            await trio.lowlevel.checkpoint()
            return commit

        return setup

    def recheck():
        log.append("commit")

    agent = await rt.create(AgentSpec("a", ScriptedModel([say("hi")])), setup=setup_with(recheck))
    log.append("published")
    assert log == ["setup", "commit", "published"]
    assert (await agent.run("hello")).text == "hi"

    def refuse():
        raise ValueError("the config changed meanwhile")

    with pytest.raises(ValueError, match="the config changed meanwhile"):
        await rt.create(AgentSpec("b", ScriptedModel([])), session_id="s2", setup=setup_with(refuse))
    assert "s2" not in rt.registry
    with pytest.raises(TypeError, match="expected a commit callback or None"):
        await rt.create(AgentSpec("c", ScriptedModel([])), setup=setup_with("yes"))


async def test_scope_context_managers_may_own_nurseries(rt):
    states = []

    @asynccontextmanager
    async def service():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            states.append("up")
            yield
            states.append("down")
            nursery.cancel_scope.cancel()

    async def setup(agent, scope):
        await scope.enter_async_context(service())

    agent = await rt.create(AgentSpec("a", ScriptedModel([say("ok")])), setup=setup)
    await agent.run("hi")
    await agent.dispose()
    assert states == ["up", "down"]


async def test_a_failing_setup_rolls_back_the_registration_and_what_it_opened(rt):
    closed = []

    @asynccontextmanager
    async def resource():
        try:
            yield
        finally:
            closed.append(True)

    async def setup(agent, scope):
        await scope.enter_async_context(resource())
        raise ValueError("no credentials")

    with pytest.raises(ValueError, match="no credentials"):
        await rt.create(AgentSpec("a", ScriptedModel([])), session_id="s1", setup=setup)
    assert closed == [True]
    assert "s1" not in rt.registry and len(rt.registry) == 0
    agent = await rt.create(
        AgentSpec("a", ScriptedModel([say("ok")])), session_id="s1"
    )  # the id is free again
    assert (await agent.run("hi")).stop_reason == "completed"


async def test_teardown_follows_its_order_and_collects_every_error():
    order = []
    agents = {}

    def setup_for(name):
        @asynccontextmanager
        async def scope_resource():
            yield
            agent = agents[name]
            # By now the run was cancelled and settled; the handle is still
            # open and the agent still registered: those come after.
            order.append(
                f"{name}: close scope (status={agent.status}, handle open={not agent._stopped.is_set()}, "
                f"registered={rt.registry.get(agent.id) is agent})"
            )
            raise OSError(f"{name} would not close")

        async def setup(agent, scope):
            agents[name] = agent
            await scope.enter_async_context(scope_resource())

        return setup

    async def busy(request):
        await trio.sleep_forever()

    with pytest.raises(ExceptionGroup) as raised:
        async with Runtime() as rt:
            await rt.create(AgentSpec("first", ScriptedModel([])), setup=setup_for("first"))
            second = await rt.create(AgentSpec("second", ScriptedModel([busy])), setup=setup_for("second"))
            subscribing = second.subscribe()  # left open: it must outlive the runtime
            subscription = await subscribing.__aenter__()
            await second.followup("work that is still running at exit")
            await trio.sleep(0.01)
            assert second.status == "running"
    assert order == [  # newest first, both scopes closed although each close failed
        "second: close scope (status=idle, handle open=True, registered=True)",
        "first: close scope (status=idle, handle open=True, registered=True)",
    ]
    leaves = [str(e) for group in raised.value.exceptions for e in group.exceptions]
    assert leaves == ["second would not close", "first would not close"]
    received = Recorder(subscription)
    assert received.of("agent_end")[-1].stop_reason == "aborted"
    with pytest.raises(trio.EndOfChannel):  # the handle closed: the subscription ended
        subscription.receive_nowait()
    assert len(rt.registry) == 0


async def test_leaving_the_runtime_disposes_newest_first_though_idle_agents_end_together():
    order = []

    class Releases(MemoryStore):
        async def release_session(self, session_id):
            order.append(f"release {session_id}")
            await super().release_session(session_id)

    @asynccontextmanager
    async def scope_resource():
        yield
        order.append("close s3's scope")

    async def setup(agent, scope):
        await scope.enter_async_context(scope_resource())

    spec = AgentSpec("a", ScriptedModel([]))
    async with Runtime(Releases()) as rt:
        for n in (1, 2):
            await rt.create(spec, session_id=f"s{n}")
        await rt.create(spec, session_id="s3", setup=setup)
        agents = [await rt.create(spec, session_id=f"s{n}") for n in (4, 5)]
        subscription = await agents[1].subscribe().__aenter__()  # left open: it must end with the agent
    # s5 and s4 (idle, no scope of their own) end together; the scope of s3
    # closes only once they are detached, and before s2 and s1 are closed.
    assert order == ["release s5", "release s4", "close s3's scope", "release s3", "release s2", "release s1"]
    with pytest.raises(trio.EndOfChannel):  # the handle closed: the subscription ended
        subscription.receive_nowait()
    assert len(rt.registry) == 0 and all(agent.status == "idle" for agent in agents)


async def test_an_error_raised_in_the_runtime_block_leaves_it_as_raised(tmp_path):
    """Not wrapped in the root nursery's exception group: ``except
    SessionHeld`` around the block catches a held session."""
    spec = AgentSpec("a", ScriptedModel([]))
    async with Runtime(SQLiteStore(tmp_path / "sessions.db")) as holder:
        await holder.create(spec, session_id="s")
        with pytest.raises(SessionHeld):
            async with Runtime(SQLiteStore(tmp_path / "sessions.db")) as rt:
                await rt.create(spec, session_id="s")
    mine = KeyError("mine")
    with pytest.raises(KeyError) as raised:
        async with Runtime() as rt:
            await rt.create(spec)
            raise mine
    assert raised.value is mine


async def test_dispose_cancels_with_cause_disposed_and_keeps_the_inbox(rt):
    release = trio.Event()

    async def slow(request):
        await release.wait()
        return say("never")

    agent = await rt.create(AgentSpec("a", ScriptedModel([slow])))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "go")
        await trio.sleep(0.01)
        await agent.followup("still queued")
        await agent.dispose()
    assert rec.of("agent_end")[-1].stop_reason == "aborted"
    assert [q.message.text for q in agent.inbox.next_turn] == ["still queued"]
    assert rt.registry.get(agent.id) is None


# -- initiators --------------------------------------------------------------


async def test_work_is_attributed_to_the_agent_and_tool_call_that_started_it(rt):
    seen = {}

    @tool
    async def who() -> str:
        """Report the initiator."""
        seen.setdefault("tool", []).append(current_initiator())
        return "ok"

    worker = _worker_spec(calls(("who", {})), say("done"), tools=[who])
    lead = AgentSpec(
        "lead",
        ScriptedModel([calls(("who", {}), ("ask", {"task": "t"})), say("done")]),
        tools=[who, agent_tool(worker, name="ask", description="")],
    )
    parent = await rt.create(lead)
    async with record(parent) as rec:
        await parent.run("go")
    lead_call, ask_call = parent.messages[1].tool_calls
    parent_view, child_view = seen["tool"]
    assert parent_view == Initiator(parent.id, lead_call.id)
    child_id = rec.of("child_event")[0].child_id
    assert child_view.agent_id == child_id and child_view.tool_call_id != ask_call.id
    # The child itself was created by the parent's call...
    assert next(e.event for e in rec.of("child_event")).agent_id == child_id


async def test_host_driven_work_is_never_attributed_to_an_old_tool_call(rt):
    seen = []
    created = {}

    @tool
    async def spawn_helper() -> str:
        """Create an agent from inside a tool call."""
        with without_initiator():
            created["host"] = await rt.create(_worker_spec(say("host work")))
        created["attributed"] = await rt.create(_worker_spec(say("child work")))
        return "created"

    @tool
    async def who() -> str:
        """Report the initiator."""
        seen.append(current_initiator())
        return "ok"

    parent = await rt.create(
        AgentSpec("lead", ScriptedModel([calls(("spawn_helper", {})), say("done")]), tools=[spawn_helper])
    )
    await parent.run("go")
    call_id = parent.messages[1].tool_calls[0].id
    assert created["host"].initiator is None
    assert created["attributed"].initiator == Initiator(parent.id, call_id)
    # Later work of the created agent belongs to it, not to the call that created it.
    helper = created["attributed"]
    helper.tools["who"] = who
    helper.spec.model._replies.extendleft([say("ok"), calls(("who", {}))])
    await helper.run("who are you")
    assert seen == [Initiator(helper.id, helper.messages[-3].tool_calls[0].id)]


# -- disposal with runs queued behind a running one ---------------------------


def _slow_spec(name="a"):
    async def slow(request):
        await trio.sleep(0.5)
        return say("done")

    return AgentSpec(name, ScriptedModel([slow] * 10))


async def _queue_behind_a_running_run(agent, nursery, results, before):
    async def run(prompt):
        results[prompt] = await agent.run(prompt)

    nursery.start_soon(run, "first")
    await trio.sleep(0.1)  # "first" is being answered
    if before == "followup":
        await agent.followup("queued follow-up")
    elif before == "steer":
        await agent.steer("queued steer")
    nursery.start_soon(run, "second")
    await trio.sleep(0.1)  # "second" is accepted and waits behind "first"


@pytest.mark.parametrize("before", [None, "followup", "steer"])
async def test_dispose_returns_and_resolves_runs_queued_behind_a_running_one(tmp_path, before):
    store = SQLiteStore(tmp_path / "s.db")
    async with Runtime(store) as rt:
        agent = await rt.create(_slow_spec())
        results = {}
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                await _queue_behind_a_running_run(agent, nursery, results, before)
                await agent.dispose()
        assert results["first"].stop_reason == "aborted"
        # Accepted, never run: it ends aborted, and its input stays in the journal.
        assert results["second"].stop_reason == "aborted"
        assert results["second"].new_messages == []
        assert rt.registry.get(agent.id) is None
    async with SQLiteStore(tmp_path / "s.db") as reopened:
        loaded = await reopened.load_state(agent.session_id)
    queued = {q.message.text for q in (*loaded.state.next_step, *loaded.state.next_turn)}
    extra = {None: set(), "followup": {"queued follow-up"}, "steer": {"queued steer"}}[before]
    assert queued == {"second"} | extra


@pytest.mark.parametrize("before", [None, "followup", "steer"])
async def test_leaving_the_runtime_returns_with_runs_queued_behind_a_running_one(before):
    results = {}
    with trio.fail_after(5):
        async with trio.open_nursery() as outside:  # the callers live outside the Runtime block
            async with Runtime() as rt:
                agent = await rt.create(_slow_spec())
                await _queue_behind_a_running_run(agent, outside, results, before)
    assert [results[p].stop_reason for p in ("first", "second")] == ["aborted", "aborted"]
