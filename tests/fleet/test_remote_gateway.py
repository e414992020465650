"""Gateways on several hosts share a PostgreSQL store: a client of any of
them opens, prompts and follows a session that another one holds, from the
journal (``agentrio.gateway.acp.remote``). In-process gateways, each with a
store and runtime of its own, over real WebSocket connections."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import trio

from agentrio import AgentSpec, AssistantMessage, PostgresStore, ScriptedModel, Text, ToolCall, tool
from agentrio.journal.postgres.database import Database

from ..gateway.ws_harness import Client, connected, running_gateway
from ..journal.proxy import Proxy

LEASE = 2.0


def inputs_left(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True, options="-c search_path=agentrio") as conn:
        return conn.execute("SELECT count(*) FROM inputs").fetchone()[0]


def user_messages(dsn: str, session_id: str) -> list[str]:
    from agentrio.journal.codec import decode_record

    with psycopg.connect(dsn, autocommit=True, options="-c search_path=agentrio") as conn:
        rows = conn.execute(
            "SELECT data FROM records WHERE session_id = %s AND kind = 'message_appended' ORDER BY seq",
            (session_id,),
        ).fetchall()
    messages = [decode_record(data).message for (data,) in rows]
    return [m.text for m in messages if m.role == "user"]


@tool
async def shout(word: str) -> str:
    """Say a word louder."""
    return word.upper()


def spec_for(replies: list) -> Callable[[Path], AgentSpec]:
    model = ScriptedModel(replies, chunk_size=4)
    return lambda cwd: AgentSpec("test", model, tools=[shout])


async def test_a_client_of_another_gateway_prompts_a_held_session_and_follows_its_answer(dsn, tmp_path):
    replies = [
        AssistantMessage([Text("Let me shout."), ToolCall("c1", "shout", {"word": "hey"})]),
        AssistantMessage([Text("It is HEY.")]),
    ]
    async with (
        running_gateway(tmp_path, [], spec_for=spec_for(replies), store=PostgresStore(dsn, lease=LEASE)) as a,
        running_gateway(tmp_path, [], spec_for=spec_for([]), store=PostgresStore(dsn, lease=LEASE)) as b,
        trio.open_nursery() as nursery,
    ):
        async with connected(a.url(), nursery) as on_a, connected(b.url(), nursery) as on_b:
            session_id = await on_a.open_session()
            await on_b.open_session(load=session_id)
            assert session_id not in b.hub.sessions  # held by a: b follows it
            with trio.fail_after(15):
                assert await on_b.prompt(session_id, "shout hey") == "end_turn"
            # b's client saw the answer; a's client (attached where it runs) the same, streamed.
            assert on_b.text() == on_a.text() == "Let me shout.It is HEY."
            statuses = [
                u.get("status")
                for u in on_b.updates()
                if u["sessionUpdate"] in ("tool_call", "tool_call_update") and u.get("status")
            ]
            assert statuses == ["pending", "in_progress", "completed"]
            # b's own prompt is not echoed to it; a's client is shown it.
            assert not on_b.updates("user_message_chunk")
            assert [u["content"]["text"] for u in on_a.updates("user_message_chunk")] == ["shout hey"]
            assert user_messages(dsn, session_id) == ["shout hey"]
            assert inputs_left(dsn) == 0
        nursery.cancel_scope.cancel()
