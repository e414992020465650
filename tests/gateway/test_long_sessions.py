"""Long sessions and bursts: a client gets all of what it asked for, paced
by its own reading, over WebSocket and over stdio."""

from __future__ import annotations

import asyncio
from pathlib import Path

import trio

from agentrio import AgentSpec, AssistantMessage, ScriptedModel, SQLiteStore, Text, Tool, ToolCall, ToolResult
from agentrio.supervisors import Runtime

from .acp_harness import FakeServerThread, RecordingClient, spawn_acp
from .ws_harness import connected, running_gateway

TURNS, CALLS, OUTPUT = 300, 8, 7300
#: A user prompt, then per turn a text and each call's start and end, then the answer.
UPDATES = 1 + TURNS * (1 + 2 * CALLS) + 1


async def _blob(args, ctx):
    return ToolResult("y" * OUTPUT)


BLOB = Tool("blob", "Returns a lot.", {"type": "object", "properties": {}}, _blob)


async def long_session(db: Path) -> str:
    """A stored session of 300 tool turns of 8 calls each: 17.5 MB of tool
    output, 5,102 updates when replayed."""
    replies = [
        AssistantMessage([Text(f"turn {t}"), *[ToolCall(f"c{t}_{i}", "blob", {}) for i in range(CALLS)]])
        for t in range(TURNS)
    ]
    replies.append(AssistantMessage([Text("All done.")]))
    async with Runtime(SQLiteStore(str(db))) as runtime:
        agent = await runtime.create(
            AgentSpec("long", ScriptedModel(replies, chunk_size=1 << 20), tools=[BLOB])
        )
        await agent.run("go")
        return agent.session_id


#: Updates about the session rather than its transcript.
NOTES = ("session_info_update", "usage_update", "available_commands_update")


async def test_a_session_of_5000_updates_loads_fully_over_websocket(tmp_path: Path):
    db = tmp_path / "s.db"
    session_id = await long_session(db)
    async with (
        running_gateway(tmp_path, [], store=SQLiteStore(str(db))) as gateway,
        trio.open_nursery() as nursery,
        connected(gateway.url(), nursery) as client,
    ):
        started = trio.current_time()
        with trio.fail_after(60):  # a client dropped halfway would wait forever
            await client.open_session(load=session_id)
        elapsed = trio.current_time() - started
        replayed = [u for u in client.updates() if u["sessionUpdate"] not in NOTES]
        assert len(replayed) == UPDATES and client.closed is None
        assert replayed[0]["content"]["text"] == "go" and replayed[-1]["content"]["text"] == "All done."
        results = [u for u in replayed if u.get("status") == "completed"]
        assert len(results) == TURNS * CALLS
        assert sum(len(u["content"][0]["content"]["text"]) for u in results) == TURNS * CALLS * OUTPUT
        # The connection goes on serving.
        assert (await client.call("session/list"))["sessions"][0]["sessionId"] == session_id
    print(
        f"\n{UPDATES} updates ({TURNS * CALLS * OUTPUT / 1e6:.1f} MB) loaded over WebSocket in {elapsed:.2f}s"
    )


def test_a_session_of_5000_updates_loads_fully_over_stdio(tmp_path: Path):
    db = tmp_path / "s.db"
    session_id = trio.run(long_session, db)

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()
        args = ["--model", "openai:fake", "--base-url", fake.server.base_url, "--db", str(db)]
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            started = asyncio.get_running_loop().time()
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            elapsed = asyncio.get_running_loop().time() - started
            replayed = [u for u in client.updates if u.session_update not in NOTES]
            assert len(replayed) == UPDATES
            assert replayed[-1].content.text == "All done."
            assert len((await conn.list_sessions()).sessions) == 1
        print(f"\n{UPDATES} updates loaded over stdio (SDK client) in {elapsed:.2f}s")

    with FakeServerThread([]) as fake:
        asyncio.run(asyncio.wait_for(main(fake), 120))


async def test_a_burst_of_500_parallel_tool_calls_does_not_drop_a_client_that_reads(tmp_path: Path):
    async def quick(args, ctx):
        return ToolResult("r" * 2000)

    fast = Tool("quick", "Quick.", {"type": "object", "properties": {}}, quick)
    replies = [
        AssistantMessage([ToolCall(f"q{i}", "quick", {}) for i in range(500)]),
        AssistantMessage([Text("Burst done.")]),
    ]
    async with running_gateway(tmp_path, replies, tools=[fast]) as gateway, trio.open_nursery() as nursery:
        async with connected(gateway.url(), nursery) as client:
            session_id = await client.open_session()
            with trio.fail_after(60):  # a client dropped halfway would wait forever
                assert await client.prompt(session_id, "burst") == "end_turn"
            done = [u for u in client.updates("tool_call_update") if u.get("status") == "completed"]
            assert len(done) == 500 and client.text() == "Burst done." and client.closed is None
