"""``submit`` and ``outcome`` on an SQLite store, for the runtimes of one host."""

from __future__ import annotations

import pytest

from agentrio import (
    AgentSpec,
    AssistantMessage,
    Outcome,
    Runtime,
    ScriptedModel,
    SessionHeld,
    SQLiteStore,
    Text,
)


async def test_submitted_prompts_run_when_a_runtime_resumes_the_session(tmp_path):
    db = tmp_path / "sessions.db"
    model = ScriptedModel([AssistantMessage([Text("one")]), AssistantMessage([Text("two")])])
    spec = AgentSpec("helper", model)
    async with SQLiteStore(db) as client:
        first = await client.submit("s1", "hello", spec=spec)
        second = await client.submit("s1", "again", spec="helper")
        assert [i.agent_name for i in await client.list_sessions()] == ["helper"]
        async with Runtime(SQLiteStore(db), resume=True) as rt:
            agent = await rt.create(spec, "s1")
            # A writer has the session open: input goes to its agent.
            with pytest.raises(SessionHeld):
                await client.submit("s1", "too late", spec="helper")
            assert await client.outcome("s1", first, timeout=10) == Outcome("completed", "one")
            assert await client.outcome("s1", second, timeout=10) == Outcome("completed", "two")
            await agent.wait_idle()
    assert [m.text for m in model.requests[1].messages] == ["hello", "one", "again"]


async def test_an_outcome_never_reached_times_out(tmp_path):
    async with SQLiteStore(tmp_path / "sessions.db") as store:
        input_id = await store.submit("s1", "hello", spec="helper")
        with pytest.raises(TimeoutError):
            await store.outcome("s1", input_id, timeout=0.3)


async def test_serve_needs_a_store_that_runtimes_share(tmp_path):
    async with Runtime(SQLiteStore(tmp_path / "sessions.db")) as rt:
        with pytest.raises(TypeError, match="needs a store that runtimes share"):
            await rt.serve({"helper": AgentSpec("helper", ScriptedModel([]))})
