"""Two ``agentrio serve --db DSN`` processes on one PostgreSQL database, driven
by the ACP SDK's own WebSocket client: a client of one host prompts a
session the other holds, and follows it; the holder is SIGKILLed mid-turn
and the session is answered all the same."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from acp import text_block

from .gateways import LEASE, client_of, serving
from .workers import ROOT, SPEC


def rows(dsn: str, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True, options="-c search_path=agentrio") as conn:
        return conn.execute(statement, params).fetchall()


def user_messages(dsn: str, session_id: str) -> list[str]:
    from agentrio.journal.codec import decode_record

    found = rows(
        dsn,
        "SELECT data FROM records WHERE session_id = %s AND kind = 'message_appended' ORDER BY seq",
        (session_id,),
    )
    messages = [decode_record(data).message for (data,) in found]
    return [m.text for m in messages if m.role == "user"]


def test_a_client_of_one_host_prompts_a_session_another_host_holds(dsn: str, tmp_path: Path):
    async def main() -> None:
        async with (
            serving(dsn, tmp_path, "a") as (_, port_a),
            serving(dsn, tmp_path, "b") as (_, port_b),
            client_of(port_a) as (on_a, seen_on_a),
            client_of(port_b) as (on_b, seen_on_b),
        ):
            session_id = (await on_a.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await on_b.load_session(session_id=session_id, cwd=str(tmp_path), mcp_servers=[])
            response = await on_b.prompt(session_id=session_id, prompt=[text_block("s1 hello")])
            assert response.stop_reason == "end_turn"
            # Both hosts' clients saw the same transcript: a's streamed, b's from the journal.
            await seen_on_a.wait_for(lambda: seen_on_a.text() == "answer to s1 hello")
            assert seen_on_b.text() == "answer to s1 hello"
            (call,) = {u.tool_call_id for u in seen_on_b.of_kind("tool_call")}
            assert (
                seen_on_b.statuses(call)
                == seen_on_a.statuses(call)
                == ["pending", "in_progress", "completed"]
            )
            assert [u.content.text for u in seen_on_a.of_kind("user_message_chunk")] == ["s1 hello"]
            # The input was taken in once, and is gone from the inputs posted.
            assert user_messages(dsn, session_id) == ["s1 hello"]
            assert rows(dsn, "SELECT count(*) FROM inputs") == [(0,)]
            assert rows(
                dsn, "SELECT holder IS NOT NULL FROM leases WHERE session_id = %s", (session_id,)
            ) == [(True,)]

    asyncio.run(asyncio.wait_for(main(), 120))


def test_the_holder_killed_mid_turn_leaves_the_prompt_of_another_host_answered(dsn: str, tmp_path: Path):
    async def main() -> None:
        # a's tool never ends: the holder is killed in the middle of it.
        async with (
            serving(dsn, tmp_path, "a", FLEET_TOOL_DELAY="600") as (holder, port_a),
            serving(dsn, tmp_path, "b") as (_, port_b),
            client_of(port_b) as (on_b, seen_on_b),
        ):
            async with client_of(port_a) as (on_a, _):
                session_id = (await on_a.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await on_b.load_session(session_id=session_id, cwd=str(tmp_path), mcp_servers=[])
            prompt = asyncio.ensure_future(
                on_b.prompt(session_id=session_id, prompt=[text_block("s1 are you there")])
            )
            await seen_on_b.wait_for(
                lambda: any(getattr(u, "status", None) == "in_progress" for u in seen_on_b.updates)
            )
            holder.send_signal(signal.SIGKILL)
            killed = asyncio.get_running_loop().time()
            response = await asyncio.wait_for(prompt, LEASE * 10)
            took = asyncio.get_running_loop().time() - killed
            print(f"lease {LEASE} s: holder killed -> prompt answered on the other host in {took:.2f} s")
            assert response.stop_reason == "end_turn"
            # The call that was running when the holder died is not run again: its outcome is unknown.
            (call,) = {u.tool_call_id for u in seen_on_b.of_kind("tool_call")}
            assert seen_on_b.statuses(call) == ["pending", "in_progress", "failed"]
            assert seen_on_b.text() == "answer to s1 are you there"
            assert user_messages(dsn, session_id) == ["s1 are you there"]
            assert rows(dsn, "SELECT count(*) FROM inputs") == [(0,)]

    asyncio.run(asyncio.wait_for(main(), 120))


def test_serve_refuses_a_lease_that_is_no_length_of_time(dsn: str, tmp_path: Path):
    result = subprocess.run(
        [sys.executable, "-m", "agentrio", "serve", "--db", dsn, "--lease", "-1", "--spec", SPEC],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "lease must be a positive number" in result.stderr
