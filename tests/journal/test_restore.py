"""Restore-or-create through the Runtime, on every store."""

from __future__ import annotations

from agentrio import AgentSpec, Runtime, ScriptedModel, Usage, agent_tool

from ..helpers import calls, echo_tool, say


async def test_a_session_comes_back_with_history_usage_and_inbox(stores):
    model = ScriptedModel(
        [calls(("echo", {"text": "x"}), usage=Usage(10, 2)), say("done", usage=Usage(5, 1))]
    )
    async with Runtime(stores()) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]), "s1")
        await agent.run("go")
        await agent.inject("remember this")
        history = list(agent.messages)

    model = ScriptedModel([say("welcome back")], strict=True)
    async with Runtime(stores()) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]), "s1")
        assert list(agent.messages) == history
        assert agent.usage == Usage(15, 3)
        assert [q.message.text for q in agent.inbox.next_step] == ["remember this"]
        result = await agent.run("and now?")
    assert result.stop_reason == "completed"
    assert [m.text for m in model.requests[0].messages] == [
        "go",
        "",
        "echo: x",
        "done",
        "remember this",
        "and now?",
    ]


async def test_an_unknown_session_id_creates_the_session(stores):
    async with Runtime(stores()) as rt:
        named = await rt.create(AgentSpec("a", ScriptedModel([])), "fresh")
        unnamed = await rt.create(AgentSpec("b", ScriptedModel([])))
        assert named.messages == () and named.session_id == "fresh"
    async with stores() as store:
        ids = {info.session_id for info in await store.list_sessions()}
    assert ids == {"fresh", unnamed.session_id}


async def test_accepted_input_is_committed_when_send_returns(new_store):
    async with Runtime(new_store()) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([])), "s1")
        await agent.inject("do not lose me")
        # Read the database at once, without yielding to the store's writer.
        kinds = new_store.execute("SELECT kind FROM records WHERE session_id = 's1'")
        assert kinds == [("inbox_spliced",)]


async def test_a_child_session_records_who_spawned_it_and_keeps_it_when_restored(stores):
    worker = AgentSpec("worker", ScriptedModel([say("deep")]))
    middle = AgentSpec(
        "middle",
        ScriptedModel([calls(("deeper", {"task": "x"})), say("middle done")]),
        tools=[agent_tool(worker, name="deeper", description="")],
    )
    lead = AgentSpec(
        "lead",
        ScriptedModel([calls(("ask", {"task": "y"})), say("top done")]),
        tools=[agent_tool(middle, name="ask", description="")],
    )
    async with Runtime(stores()) as rt:
        parent = await rt.create(lead, "lead")
        await parent.run("go")
        helper = await rt.create(AgentSpec("helper", ScriptedModel([])), "helper", parent=parent)
        assert helper.parent_id == "lead"
    async with stores() as store:
        infos = await store.list_sessions()
    spawned = {info.agent_name: info.spawned_by for info in infos}
    names = {info.session_id: info.agent_name for info in infos}
    assert spawned == {"lead": None, "middle": "lead", "worker": spawned["worker"], "helper": "lead"}
    assert names[spawned["worker"]] == "middle"
    assert all(info.parent_session_id is None for info in infos)  # none is a fork

    (worker_id,) = [session_id for session_id, name in names.items() if name == "worker"]
    before = next(info for info in infos if info.session_id == worker_id)
    # Restored at the top, under another spec: what it recorded stays.
    async with Runtime(stores()) as rt:
        restored = await rt.create(AgentSpec("renamed", ScriptedModel([say("back")])), worker_id)
        assert [m.text for m in restored.messages] == ["x", "deep"]
        await restored.run("again")
        assert (await rt.store.load_session(worker_id))[0] == before
    async with stores() as store:
        assert (await store.load_state(worker_id)).info == before
        summaries = {s.info.session_id: s for s in await store.list_summaries()}
    assert summaries[worker_id].info == before and summaries[worker_id].messages == 4
