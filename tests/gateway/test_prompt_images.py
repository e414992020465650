"""ACP ``image`` blocks in prompts, through ``agentrio acp`` and the
official ACP SDK client: into the user message, to the model, and back in
a replay."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest
from acp import RequestError, image_block, text_block

from agentrio.messages import AssistantMessage, Text

from .acp_harness import FakeServerThread, RecordingClient, spawn_acp

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
PNG64 = base64.b64encode(PNG).decode()


def test_an_image_block_reaches_the_model_and_comes_back_in_a_replay(tmp_path: Path):
    async def main(fake: FakeServerThread) -> None:
        args = ["--model", "openai:fake", "--base-url", fake.server.base_url, "--db", str(tmp_path / "s.db")]
        first = RecordingClient()
        async with spawn_acp(first, *args, stderr_path=tmp_path / "err") as (conn, _):
            init = await conn.initialize(protocol_version=1)
            assert init.agent_capabilities.prompt_capabilities.image is True
            session_id = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            # Refused in plain words, with nothing sent to the model: bytes that are
            # not the type they claim, data that is not base64, a type no model takes.
            for block, words in (
                (
                    image_block(base64.b64encode(b"GIF89a....").decode(), "image/png"),
                    "the bytes of image/gif",
                ),
                (image_block("not base64!", "image/png"), "not base64"),
                (image_block(PNG64, "image/svg+xml"), "expected one of"),
            ):
                with pytest.raises(RequestError) as refused:
                    await conn.prompt(session_id=session_id, prompt=[text_block("see"), block])
                assert refused.value.code == -32602 and words in str(refused.value)
            assert fake.requests == []
            response = await conn.prompt(
                session_id=session_id, prompt=[text_block("what is this?"), image_block(PNG64, "image/png")]
            )
            assert response.stop_reason == "end_turn"
        user = fake.requests[0].body["messages"][-1]
        assert user["role"] == "user"
        assert {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}} in user[
            "content"
        ]
        assert {"type": "text", "text": "what is this?"} in user["content"]
        # A replay after a restart shows the prompt's text and its image.
        second = RecordingClient()
        async with spawn_acp(second, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
        shown = [u.content for u in second.of_kind("user_message_chunk")]
        assert [c.type for c in shown] == ["text", "image"]
        assert shown[0].text == "what is this?"
        assert (shown[1].mime_type, base64.b64decode(shown[1].data)) == ("image/png", PNG)

    with FakeServerThread([AssistantMessage([Text("A pixel.")])]) as fake:
        asyncio.run(asyncio.wait_for(main(fake), 60))
