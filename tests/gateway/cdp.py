"""Headless Chromium driven over the Chrome DevTools Protocol, with
trio-websocket as the protocol's client."""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio_websocket

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1440,900",
    "--hide-scrollbars",
]


def chromium_or_skip() -> str:
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    pytest.skip("headless Chromium is not installed: `apt-get install -y chromium` (.ci/run does it)")


class Page:
    def __init__(self, ws: trio_websocket.WebSocketConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._replies: dict[int, Any] = {}
        self._changed = trio.Event()

    async def run(self) -> None:
        try:
            while True:
                message = json.loads(await self._ws.get_message())
                if "id" in message:
                    self._replies[message["id"]] = message
                    self._changed.set()
                    self._changed = trio.Event()
        except trio_websocket.ConnectionClosed:
            pass

    async def send(self, method: str, **params: Any) -> Any:
        request_id = next(self._ids)
        await self._ws.send_message(json.dumps({"id": request_id, "method": method, "params": params}))
        while request_id not in self._replies:
            await self._changed.wait()
        reply = self._replies.pop(request_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_until(self, expression: str, timeout: float = 20) -> None:
        """Wait until ``expression`` is true, across a navigation of the page."""
        with trio.fail_after(timeout):
            while True:
                try:
                    if await self.evaluate(expression):
                        return
                except RuntimeError as exc:
                    if "navigated" not in str(exc) and "context" not in str(exc):
                        raise
                await trio.sleep(0.05)

    async def reload(self) -> None:
        await self.send("Page.reload")

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


@asynccontextmanager
async def open_page(url: str, profile: Path):
    """A headless Chromium showing ``url``, for the block."""
    binary = chromium_or_skip()
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            partial(
                trio.run_process,
                [binary, *FLAGS, f"--user-data-dir={profile}", url],
                stderr=-1,
                stdout=-3,
                check=False,
            )
        )
        try:
            endpoint = await _devtools_endpoint(process.stderr)
            nursery.start_soon(_drain, process.stderr)  # chromium must never block on its log
            async with httpx.AsyncClient() as http:
                with trio.fail_after(20):
                    while True:
                        targets = (await http.get(f"http://{endpoint}/json/list")).json()
                        pages = [t for t in targets if t["type"] == "page"]
                        if pages:
                            break
                        await trio.sleep(0.1)
            async with trio_websocket.open_websocket_url(
                pages[0]["webSocketDebuggerUrl"], max_message_size=64 * 1024 * 1024
            ) as ws:
                page = Page(ws)
                nursery.start_soon(page.run)
                yield page
        finally:
            process.terminate()
            nursery.cancel_scope.deadline = trio.current_time() + 10


async def _devtools_endpoint(stderr: trio.abc.ReceiveStream) -> str:
    seen = b""
    with trio.fail_after(30):
        while (match := re.search(rb"DevTools listening on ws://([^/]+)/", seen)) is None:
            data = await stderr.receive_some(4096)
            if not data:
                raise RuntimeError(f"chromium exited: {seen.decode(errors='replace')}")
            seen += data
    return match.group(1).decode()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some(65536):
        pass
