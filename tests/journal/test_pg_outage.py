"""A PostgreSQL server that goes away and comes back: the store reconnects
by itself, and the agents on it go on (a server of this module's own, since
it is killed)."""

from __future__ import annotations

import os

import pytest
import trio

from agentrio import AgentSpec, Runtime, ScriptedModel, StoreError, tool
from agentrio.journal import PostgresStore

from ..helpers import calls, say
from ..pgcluster import Cluster, ServerMissing

OUTAGE = 3.0


@pytest.fixture(scope="module")
def cluster():
    try:
        cluster = Cluster.start(fsync=False)
    except ServerMissing as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the PostgreSQL store: {exc}", pytrace=False)
        pytest.skip(str(exc))
    yield cluster
    cluster.stop()


async def test_a_store_idle_through_a_server_restart_runs_again_once_it_is_back(cluster):
    dsn = cluster.new_database()
    store = PostgresStore(dsn, lease=10.0)
    async with Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("before"), say("after")])), "s1")
        assert (await agent.run("one")).stop_reason == "completed"
        await trio.to_thread.run_sync(cluster.kill_server)
        # The store finds the server gone (any use does; renewing its lease
        # would, within a third of the lease).
        with pytest.raises(StoreError):
            await store.list_sessions()
        assert store.failed.is_set()
        await trio.sleep(OUTAGE)
        await trio.to_thread.run_sync(cluster.start_server)
        back = trio.current_time()
        with trio.fail_after(15):
            await store.until_usable()
            recovery = trio.current_time() - back
            result = await agent.run("two")
        print(
            f"after a {OUTAGE:.0f} s outage the store was usable {recovery:.2f} s after the server was back"
        )
        assert recovery < 2.0
        assert result.stop_reason == "completed", result.error
        assert [m.text for m in agent.messages if m.role == "assistant"] == ["before", "after"]
        assert not store.failed.is_set()
        # A new session works too, on the same store object.
        other = await rt.create(AgentSpec("b", ScriptedModel([say("new")])), "s2")
        assert (await other.run("three")).stop_reason == "completed"
    async with PostgresStore(dsn) as fresh:
        _, records = await fresh.load_session("s1")
        assert sum(r.type == "message_appended" for r in records) == 4


async def test_a_server_killed_under_a_running_tool_stops_the_run_once_and_the_queued_input_runs_after(
    cluster,
):
    dsn = cluster.new_database()
    started = trio.Event()

    @tool
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        await trio.sleep_forever()

    model = ScriptedModel([calls(("wait_forever", {})), say("queued answered")])
    store = PostgresStore(dsn, lease=10.0)
    async with Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[wait_forever]), "s1")
        ends = []

        async def watch(task_status=trio.TASK_STATUS_IGNORED) -> None:
            async with agent.subscribe() as events:
                task_status.started()
                async for event in events:
                    if event.type in ("agent_end", "store_failed", "store_recovered"):
                        ends.append(event.type)

        await rt.nursery.start(watch)
        first = []
        rt.nursery.start_soon(lambda: _run(agent, "go", first))
        with trio.fail_after(10):
            await started.wait()
        queued = await agent.followup("after the outage")
        await trio.to_thread.run_sync(cluster.kill_server)
        with pytest.raises(StoreError):
            await agent.steer("a line the store cannot take")  # finds the server gone
        with trio.fail_after(10):
            while not first:
                await trio.sleep(0.01)
        assert first[0].stop_reason == "error" and repr(store) in first[0].error, first[0].error
        await trio.sleep(OUTAGE)
        assert ends == ["store_failed", "agent_end"], ends  # one run ended, nothing retried meanwhile
        await trio.to_thread.run_sync(cluster.start_server)
        with trio.fail_after(15):
            while ends.count("agent_end") < 2:
                await trio.sleep(0.01)
        assert ends == ["store_failed", "agent_end", "store_recovered", "agent_end"], ends
        assert agent.messages[-1].text == "queued answered"
    async with PostgresStore(dsn) as fresh:
        _, records = await fresh.load_session("s1")
    assert queued.id in {q.id for r in records if r.type == "inbox_spliced" for q in r.items}


async def _run(agent, prompt: str, results: list) -> None:
    results.append(await agent.run(prompt))
