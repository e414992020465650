"""A bare JSON-RPC client of ``agentrio acp`` (trio, real pipes), for what
the SDKs will not send: malformed answers, requests out of order. Every
message the agent sends is checked against the official ACP schema."""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from .acp_harness import ROOT
from .npm_acp import OfficialSchema

#: ``answer(request)``: the result to send back for a request of the agent.
Answer = Callable[[dict[str, Any]], Any]


class RawClient:
    def __init__(self, process: trio.Process, schema: OfficialSchema, answer: Answer) -> None:
        self._process = process
        self._schema = schema
        self._answer = answer
        self._ids = itertools.count(1)
        self._methods: dict[Any, str] = {}
        self._buffer = b""
        #: Every message the agent sent, in order.
        self.received: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            self._methods[message["id"]] = message["method"]
        await self._process.stdin.send_all(json.dumps(message).encode() + b"\n")

    async def _next(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            chunk = await self._process.stdout.receive_some(65536)
            assert chunk, "the agent closed its output"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message = json.loads(line)
        self._schema.check(message, None if "method" in message else self._methods.get(message.get("id")))
        self.received.append(message)
        return message

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request; the whole response (result or error), answering
        the agent's own requests meanwhile."""
        request_id = next(self._ids)
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        with trio.fail_after(30):
            while True:
                message = await self._next()
                if "method" in message and "id" in message:
                    result = self._answer(message)
                    await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
                elif "method" not in message and message.get("id") == request_id:
                    return message

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.received
            if m.get("method") == "session/update"
            and (kind is None or m["params"]["update"]["sessionUpdate"] == kind)
        ]


@asynccontextmanager
async def raw_acp(
    args: list[str], schema: OfficialSchema, stderr_path: Path, answer: Answer = lambda request: {}
) -> AsyncIterator[RawClient]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "fake"}
    command = [sys.executable, "-m", "agentrio", "acp", *args]
    with open(stderr_path, "ab") as stderr:
        process = await trio.lowlevel.open_process(command, stdin=-1, stdout=-1, stderr=stderr, env=env)
    try:
        yield RawClient(process, schema, answer)
        await process.stdin.aclose()
        with trio.fail_after(15):
            assert await process.wait() == 0
    finally:
        process.kill()
