"""Renaming a session through ``_agentrio/session/rename``, with the
official ACP SDK client over ``agentrio acp``: the title is journaled, so
the clients, a restarted gateway and ``agentrio sessions list`` all say it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block

from agentrio.messages import AssistantMessage, Text

from .acp_harness import ROOT, FakeServerThread, RecordingClient, spawn_acp


async def titles(conn) -> dict[str, str | None]:
    listed = await conn.list_sessions()
    return {s.session_id: s.title for s in listed.sessions}


def test_a_rename_is_journaled_told_to_clients_and_kept_across_a_restart(tmp_path: Path):
    async def main(fake: FakeServerThread) -> None:
        args = ["--model", "openai:fake", "--base-url", fake.server.base_url, "--db", str(tmp_path / "s.db")]
        first = RecordingClient()
        async with spawn_acp(first, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            live = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            other = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=live, prompt=[text_block("fix   the parser\nand more")])
            await conn.prompt(session_id=other, prompt=[text_block("write docs")])
            assert (await titles(conn))[live] == "fix the parser and more"  # the first prompt, until renamed
            kept = await conn.ext_method(
                "agentrio/session/rename", {"sessionId": live, "title": " Parser\n work "}
            )
            assert kept == {"title": "Parser work"}
            await first.wait_for(
                lambda: any(u.title == "Parser work" for u in first.of_kind("session_info_update"))
            )
            assert await titles(conn) == {live: "Parser work", other: "write docs"}
            for params, code, words in (
                ({"sessionId": live, "title": "  "}, -32602, "title must hold some text"),
                ({"sessionId": live, "title": "x" * 201}, -32602, "at most 200 characters"),
                ({"sessionId": live, "title": 7}, -32602, "title must be a string"),
                ({"sessionId": "session_nope", "title": "a"}, -32002, "no session"),
            ):
                with pytest.raises(RequestError) as refused:
                    await conn.ext_method("agentrio/session/rename", params)
                assert refused.value.code == code and words in str(refused.value)
        # Restarted: the rename is in the journal; a stored session (not loaded) is renamed too.
        second = RecordingClient()
        async with spawn_acp(second, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            assert await titles(conn) == {live: "Parser work", other: "write docs"}
            await conn.ext_method("agentrio/session/rename", {"sessionId": other, "title": "Docs"})
            assert await titles(conn) == {live: "Parser work", other: "Docs"}
        # The CLI reads the same records.
        listed = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentrio",
            "--db",
            str(tmp_path / "s.db"),
            "sessions",
            "list",
            "--json",
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        out, _ = await listed.communicate()
        rows = [json.loads(line) for line in out.decode().splitlines()]
        assert sorted(row["title"] for row in rows) == ["Docs", "Parser work"]

    replies = [AssistantMessage([Text("Fixed.")]), AssistantMessage([Text("Written.")])]
    with FakeServerThread(replies) as fake:
        asyncio.run(asyncio.wait_for(main(fake), 60))
