"""``agentrio serve`` as a real process, driven by the ACP SDK's own
WebSocket client (``agent-client-protocol[http]``) unchanged."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from acp import RequestError, connect_to_agent, text_block
from acp.ws import create_websocket_stream

from agentrio.messages import AssistantMessage, Text, ToolCall

from .acp_harness import ROOT, FakeServerThread, RecordingClient, acp_args


def test_the_sdk_websocket_client_runs_a_whole_prompt_against_agentrio_serve(tmp_path: Path):
    (tmp_path / "a.txt").write_text("alpha\n")
    replies = [
        AssistantMessage([Text("Looking."), ToolCall("c1", "read", {"path": "a.txt"})]),
        AssistantMessage([Text("It says alpha.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "fake"}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentrio",
            "serve",
            "--port",
            "0",
            "--token",
            "s3cret-s3cret-s3cret",
            *acp_args(fake, tmp_path),
            "--cwd",
            str(tmp_path),
            "--root",
            str(tmp_path),
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        try:
            banner = (await process.stdout.readline()).decode()
            assert (
                banner.startswith("agentrio console: http://127.0.0.1:")
                and "token=s3cret-s3cret-s3cret" in banner
            )
            port = banner.split(":")[3].split("/")[0]
            transport = await create_websocket_stream(
                f"ws://127.0.0.1:{port}/acp", headers={"Authorization": "Bearer s3cret-s3cret-s3cret"}
            )
            client = RecordingClient()
            conn = connect_to_agent(client, transport)
            try:
                assert (await conn.initialize(protocol_version=1)).agent_capabilities.load_session
                # A cwd outside --root is refused, however it is spelled.
                for outside in ("/", "/proc/self", str(tmp_path / ".." / "..")):
                    with pytest.raises(RequestError) as refused:
                        await conn.new_session(cwd=outside, mcp_servers=[])
                    assert refused.value.code == -32602 and "outside the folder this server serves" in str(
                        refused.value
                    )
                session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                response = await conn.prompt(
                    session_id=session.session_id, prompt=[text_block("what is in a?")]
                )
                assert response.stop_reason == "end_turn"
            finally:
                await conn.close()
            assert client.text() == "Looking.It says alpha."
            assert client.statuses("c1") == ["pending", "in_progress", "completed"]
        finally:
            process.terminate()
            await process.wait()

    with FakeServerThread(replies) as fake:
        asyncio.run(asyncio.wait_for(main(fake), 60))
