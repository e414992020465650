"""The console in headless Chromium shows a prompt's image, and renames a
session in place."""

from __future__ import annotations

from pathlib import Path

import trio

from agentrio import AssistantMessage, Text

from .cdp import open_page
from .test_prompt_images import PNG64
from .ws_harness import TOKEN, connected, running_gateway


async def test_the_console_shows_a_prompts_image_and_renames_the_session(tmp_path: Path):
    workspace = tmp_path / "work"
    workspace.mkdir()
    async with running_gateway(workspace, [AssistantMessage([Text("A pixel.")])]) as gateway:
        async with trio.open_nursery() as nursery, connected(gateway.url(), nursery) as client:
            session_id = await client.open_session()
            prompt = [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "data": PNG64, "mimeType": "image/png"},
            ]
            await client.call("session/prompt", {"sessionId": session_id, "prompt": prompt})
        url = f"http://127.0.0.1:{gateway.port}/?token={TOKEN}#session={session_id}"
        async with open_page(url, tmp_path / "profile") as page:
            await page.wait_until("document.querySelector('.message.user img') !== null")
            assert await page.evaluate("document.querySelector('.message.user img').src") == (
                f"data:image/png;base64,{PNG64}"
            )
            await page.wait_until(
                "document.querySelector('.message.user img').naturalWidth === 1"
            )  # it decoded
            assert await page.evaluate("document.querySelector('.message.user').firstChild.textContent") == (
                "what is this?"
            )
            await page.wait_until(
                "document.querySelector('#sessions li .sid')?.textContent === 'what is this?'"
            )
            await page.evaluate("document.querySelector('#sessions li .rename').click()")
            await page.evaluate("""
                const input = document.querySelector('#sessions li input.rename-title');
                input.value = 'A single pixel';
                input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
            """)
            await page.wait_until(
                "document.querySelector('#sessions li .sid')?.textContent === 'A single pixel'"
            )
            await page.wait_until("document.getElementById('session-title').textContent === 'A single pixel'")
        assert gateway.hub.sessions[session_id].agent.title == "A single pixel"
