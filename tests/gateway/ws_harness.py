"""An in-process gateway on a loopback port, and a small JSON-RPC client on
trio-websocket that records what it is sent."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
import trio_websocket

from agentrio import AgentSpec, MemoryStore, ScriptedModel
from agentrio.gateway import open_hub
from agentrio.gateway.acp.sessions import SessionHub
from agentrio.gateway.websocket import WebSocketOptions, serve_websocket
from agentrio.tools.builtin import coding_tools
from agentrio.tools.permissions import allow_all

TOKEN = "test-token"


@attrs.define
class Gateway:
    hub: SessionHub
    port: int
    model: ScriptedModel

    def url(self, token: str | None = TOKEN, path: str = "/acp") -> str:
        query = f"?token={token}" if token is not None else ""
        return f"ws://127.0.0.1:{self.port}{path}{query}"


@asynccontextmanager
async def running_gateway(
    workspace: Path,
    replies: list[Any],
    *,
    tools: list[Any] = (),
    permission: Any = allow_all,
    store: Any = None,
    chunk_size: int = 8,
    spec_for: Callable[[Path], AgentSpec] | None = None,
    sandbox: Any = None,
    **options: Any,
):
    """A gateway whose sessions run ``replies`` with the coding tools and
    ``tools`` (or whatever ``spec_for(cwd)`` makes)."""
    model = ScriptedModel(replies, chunk_size=chunk_size)

    def coding_agent(cwd: Path) -> AgentSpec:
        return AgentSpec("test", model, tools=[*coding_tools(cwd), *tools], permission=permission)

    async with open_hub(store or MemoryStore(), spec_for or coding_agent, workspace, sandbox=sandbox) as hub:
        listeners = await hub.nursery.start(
            serve_websocket, hub, WebSocketOptions(TOKEN, **options), "127.0.0.1", 0
        )
        yield Gateway(hub, listeners[0].socket.getsockname()[1], model)


class Client:
    """Records notifications, answers permission requests from ``answers``
    (option ids), and matches responses to calls."""

    def __init__(self, ws: trio_websocket.WebSocketConnection, answers: list[str] = ()) -> None:
        self.ws = ws
        self.answers = list(answers)
        self.notifications: list[dict[str, Any]] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.closed: trio_websocket.CloseReason | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, Any] = {}
        self._changed = trio.Event()

    async def run(self) -> None:
        try:
            while True:
                message = json.loads(await self.ws.get_message())
                if "method" in message and "id" in message:
                    self.permission_requests.append(message["params"])
                    if self.answers:  # with none left, the request stays unanswered
                        answer = {"outcome": {"outcome": "selected", "optionId": self.answers.pop(0)}}
                        await self.ws.send_message(
                            json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer})
                        )
                elif "method" in message:
                    self.notifications.append(message["params"])
                else:
                    self._pending[message["id"]] = message
                self._changed.set()
                self._changed = trio.Event()
        except trio_websocket.ConnectionClosed as exc:
            self.closed = exc.reason
            self._changed.set()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self._changed.wait()

    async def call(self, method: str, params: Any = None) -> Any:
        request_id = next(self._ids)
        self._pending[request_id] = None
        await self.ws.send_message(
            json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        )
        await self.wait_for(lambda: self._pending[request_id] is not None or self.closed is not None)
        response = self._pending.pop(request_id)
        if response is None:
            raise ConnectionError(f"closed before {method} was answered: {self.closed}")
        if "error" in response:
            raise RuntimeError(response["error"])
        return response["result"]

    async def notify(self, method: str, params: Any) -> None:
        await self.ws.send_message(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    async def open_session(self, load: str | None = None) -> str:
        await self.call("initialize", {"protocolVersion": 1})
        if load is None:
            return (await self.call("session/new", {"cwd": "", "mcpServers": []}))["sessionId"]
        await self.call("session/load", {"sessionId": load, "cwd": "", "mcpServers": []})
        return load

    async def prompt(self, session_id: str, text: str) -> str:
        result = await self.call(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )
        return result["stopReason"]

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            n["update"] for n in self.notifications if kind is None or n["update"]["sessionUpdate"] == kind
        ]

    def text(self) -> str:
        return "".join(u["content"]["text"] for u in self.updates("agent_message_chunk"))


@asynccontextmanager
async def connected(url: str, nursery: trio.Nursery, answers: list[str] = (), **kwargs: Any):
    async with trio_websocket.open_websocket_url(url, **kwargs) as ws:
        client = Client(ws, answers)
        nursery.start_soon(client.run)
        yield client
