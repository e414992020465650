"""The web console in headless Chromium: open it with the token, prompt,
watch the answer stream in, approve a permission, cancel a running tool."""

from __future__ import annotations

import json
import os
from pathlib import Path

import trio

from agentrio import AssistantMessage, Text, Thinking, Tool, ToolCall, Usage, UserMessage
from agentrio.tools.permissions import read_only

from .cdp import open_page
from .ws_harness import TOKEN, running_gateway


async def test_the_console_prompts_streams_approves_and_cancels_in_a_browser(tmp_path: Path):
    workspace = tmp_path / "work"
    workspace.mkdir()

    async def forever(args, ctx):
        await trio.sleep_forever()

    wait = Tool("wait", "Waits until cancelled.", {"type": "object", "properties": {}}, forever)
    replies = [
        AssistantMessage(
            [
                Thinking("The user wants a file; writing needs approval."),
                Text("Hello from agentrio! I will create hello.txt for you."),
                ToolCall("w1", "write", {"path": "hello.txt", "content": "hi\n"}),
                ToolCall("r1", "ls", {"path": "."}),
            ]
        ),
        AssistantMessage([Text("Wrote hello.txt.")]),
        AssistantMessage([Text("Waiting now."), ToolCall("g1", "wait", {})]),
    ]
    async with running_gateway(workspace, replies, tools=[wait], permission=read_only) as gateway:
        url = f"http://127.0.0.1:{gateway.port}/?token={TOKEN}"
        async with open_page(url, tmp_path / "profile") as page:
            await page.wait_until("document.getElementById('connection')?.textContent === 'online'")
            await page.evaluate("document.getElementById('new-session').click()")
            await page.wait_until("!document.getElementById('send').disabled")

            await page.evaluate("""
                document.getElementById('prompt').value = 'Please create hello.txt';
                document.getElementById('composer').requestSubmit();
            """)
            # The answer streams in before the write, which waits for approval.
            await page.wait_until("document.getElementById('approval').open")
            streamed = await page.evaluate("document.querySelector('.message.assistant').textContent")
            assert streamed == "Hello from agentrio! I will create hello.txt for you."
            assert await page.evaluate("document.querySelector('.message.user').textContent") == (
                "Please create hello.txt"
            )
            assert "hello.txt" in await page.evaluate("document.getElementById('approval-title').textContent")
            assert not (workspace / "hello.txt").exists()
            # Diffs carry whole files: unchanged lines away from the change are counted, not shown.
            shown = await page.evaluate(
                "JSON.stringify(lineDiff([...Array(20).keys()].join('\\n'), "
                "[...Array(20).keys()].join('\\n').replace('10', 'ten')))"
            )
            assert json.loads(shown) == [
                ["…", "… 7 unchanged lines"],
                *[[" ", str(n)] for n in (7, 8, 9)],
                ["-", "10"],
                ["+", "ten"],
                *[[" ", str(n)] for n in (11, 12, 13)],
                ["…", "… 6 unchanged lines"],
            ]
            await page.screenshot(tmp_path / "approval.png")
            await page.evaluate("document.querySelector('#approval [data-option=\"allow-once\"]').click()")

            await page.wait_until(
                "document.querySelector('[data-call=\"w1\"]')?.dataset.status === 'completed'"
            )
            await page.wait_until(
                "[...document.querySelectorAll('.message.assistant')]"
                ".some(m => m.textContent === 'Wrote hello.txt.')"
            )
            assert (workspace / "hello.txt").read_text() == "hi\n"
            assert await page.evaluate("document.querySelectorAll('#timeline .lane').length") == 2
            await page.wait_until("document.getElementById('status').textContent === 'idle'")

            await page.evaluate("""
                document.getElementById('prompt').value = 'Now wait';
                document.getElementById('composer').requestSubmit();
            """)
            await page.wait_until(
                "document.querySelector('[data-call=\"g1\"]')?.dataset.status === 'in_progress'"
            )
            await page.wait_until("!document.getElementById('cancel').disabled")
            await page.evaluate("document.getElementById('cancel').click()")
            await page.wait_until("document.querySelector('[data-call=\"g1\"]').dataset.status === 'failed'")
            await page.wait_until(
                "[...document.querySelectorAll('.notice')]"
                ".some(n => n.textContent === 'turn ended: cancelled')"
            )
            await page.screenshot(tmp_path / "console.png")
            if shots := os.environ.get("AGENTRIO_SCREENSHOTS"):
                for name in ("approval.png", "console.png"):
                    (Path(shots) / name).write_bytes((tmp_path / name).read_bytes())
        assert gateway.hub.sessions and all(s.agent.status == "idle" for s in gateway.hub.sessions.values())


async def test_the_console_keeps_offline_prompts_its_token_and_session_and_fits_a_phone(tmp_path: Path):
    workspace = tmp_path / "work"
    workspace.mkdir()
    replies = [
        AssistantMessage([Text("Running it."), ToolCall("b1", "bash", {"command": "printf 'one\\ntwo\\n'"})]),
        AssistantMessage([Text("Printed two lines.")], usage=Usage(1200, 30, cost=0.0123)),
        AssistantMessage([Text("Got your offline prompt.")]),
    ]
    async with running_gateway(workspace, replies) as gateway:
        url = f"http://127.0.0.1:{gateway.port}/?token={TOKEN}"
        async with open_page(url, tmp_path / "profile") as page:
            await page.wait_until("document.getElementById('connection')?.textContent === 'online'")
            await page.evaluate("document.getElementById('new-session').click()")
            await page.wait_until("location.hash.startsWith('#session=session_')")
            session_id = await page.evaluate("decodeURIComponent(location.hash.slice(9))")
            await page.evaluate("""
                document.getElementById('prompt').value = 'Print two lines';
                document.getElementById('composer').requestSubmit();
            """)
            await page.wait_until(
                "document.querySelector('[data-call=\"b1\"]')?.dataset.status === 'completed'"
            )
            # A finished call keeps its output, as text, folded.
            output = "document.querySelector('[data-call=\"b1\"] details.output')"
            assert await page.evaluate(f"{output}.open") is False
            assert await page.evaluate(f"{output}.querySelector('pre').textContent") == "one\ntwo"
            assert await page.evaluate(f"{output}.querySelector('summary').textContent") == "output · 2 lines"
            await page.wait_until("document.getElementById('status').textContent === 'idle'")
            # One status: the session's own, in the header and in the list.
            assert (
                await page.evaluate("document.querySelector('#sessions li.current .pill').textContent")
                == "idle"
            )
            await page.wait_until(
                "document.getElementById('usage').textContent.endsWith('out tokens · $0.0123')"
            )

            # Offline: the prompt is kept, shown queued, and sent once the connection is back.
            await page.evaluate("window.reconnect = rpc.connect; rpc.connect = () => {}; rpc.ws.close()")
            await page.wait_until("document.getElementById('connection').textContent === 'offline'")
            assert await page.evaluate("document.getElementById('send').textContent") == "Offline: queue"
            await page.evaluate("""
                document.getElementById('prompt').value = 'Typed while offline';
                document.getElementById('composer').requestSubmit();
            """)
            assert await page.evaluate("document.querySelector('.message.user.queued').textContent") == (
                "Typed while offline"
            )
            await page.evaluate("rpc.connect = window.reconnect; rpc.connect()")
            await page.wait_until(
                "[...document.querySelectorAll('.message.assistant')]"
                ".some(m => m.textContent === 'Got your offline prompt.')"
            )
            assert await page.evaluate("document.querySelectorAll('.message.user.queued').length") == 0
            prompts = [
                m.text for m in gateway.hub.sessions[session_id].agent.messages if isinstance(m, UserMessage)
            ]
            assert prompts == ["Print two lines", "Typed while offline"]
            await page.wait_until("document.getElementById('send').textContent === 'Send'")

            # A reload without the token in the address reopens the session: the token is kept for the origin.
            await page.evaluate("window.beforeReload = true")
            await page.reload()
            await page.wait_until(
                "!window.beforeReload && document.getElementById('connection')?.textContent === 'online'"
            )
            await page.wait_until(
                "[...document.querySelectorAll('.message.assistant')]"
                ".some(m => m.textContent === 'Got your offline prompt.')"
            )
            assert await page.evaluate("location.search") == ""
            assert await page.evaluate("document.getElementById('session-meta').textContent") == session_id

            # 420 px wide: the sessions are a drawer, closed until the menu opens it.
            await page.send(
                "Emulation.setDeviceMetricsOverride", width=420, height=800, deviceScaleFactor=1, mobile=True
            )
            sidebar = "document.getElementById('sidebar').getBoundingClientRect()"
            await page.wait_until(f"{sidebar}.right <= 0")
            assert (
                await page.evaluate("document.getElementById('transcript').getBoundingClientRect().width")
                > 380
            )
            await page.evaluate("document.getElementById('menu').click()")
            await page.wait_until(f"{sidebar}.left === 0 && {sidebar}.width <= 336")
            await page.screenshot(tmp_path / "narrow.png")
            if shots := os.environ.get("AGENTRIO_SCREENSHOTS"):
                (Path(shots) / "narrow.png").write_bytes((tmp_path / "narrow.png").read_bytes())

            # Delete: a second click on the session's × removes it.
            for _ in range(2):
                await page.evaluate("document.querySelector('#sessions li.current .delete').click()")
            await page.wait_until("document.querySelectorAll('#sessions li').length === 0")
            assert await page.evaluate("location.hash") == ""

            # Forget token: the token is gone and the page says so.
            await page.evaluate("document.getElementById('forget-token').click()")
            await page.wait_until(
                "[...document.querySelectorAll('.notice')].some(n => n.textContent.startsWith('No token'))"
            )
            assert await page.evaluate("localStorage.getItem('agentrio-token')") is None
