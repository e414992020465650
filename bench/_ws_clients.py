"""The WebSocket clients of ``gateway_fanout.py``, in a process of their own
(so that the gateway's process counts the server's CPU time alone; this
module imports neither agentrio nor the gateway, to start fast).

    python bench/_ws_clients.py URL CLIENTS ANSWER_CHARS [--raw]

Connect every client (ACP: ``initialize``, then the first makes a session
and the others ``session/load`` it; with ``--raw``, no handshake), print
"ready", wait for a line on stdin, have the first prompt, read until every
client has the whole answer, print "done FRAMES" (the answer's frames all
the clients got).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import trio
import trio_websocket


async def _call(
    ws: trio_websocket.WebSocketConnection, request_id: int, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    await ws.send_message(
        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    )
    while True:
        message: dict[str, Any] = json.loads(await ws.get_message())
        if message.get("id") == request_id and "method" not in message:
            return message


#: Clients connecting at once: the gateway lets go of the oldest of more
#: than 32 handshakes pending from one address.
CONNECTING = 16


async def _watch(
    url: str,
    answer: int,
    ready: trio.Event,
    start: trio.Event,
    session: dict[str, Any],
    first: bool,
    connecting: trio.CapacityLimiter,
) -> None:
    async with connecting:
        ws = await trio_websocket.connect_websocket_url(session["nursery"], url, max_message_size=2**24)
    async with ws:
        if session.get("acp"):
            await _call(ws, 1, "initialize", {"protocolVersion": 1})
            if first:
                result = await _call(ws, 2, "session/new", {"cwd": "", "mcpServers": []})
                session["id"] = result["result"]["sessionId"]
                session["created"].set()
            else:
                await session["created"].wait()
                params = {"sessionId": session["id"], "cwd": "", "mcpServers": []}
                await _call(ws, 2, "session/load", params)
        ready.set()
        await start.wait()
        if first:
            message = {"sessionId": session.get("id", ""), "prompt": [{"type": "text", "text": "talk"}]}
            await ws.send_message(
                json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": message})
            )
        got = 0
        while got < answer:
            message = json.loads(await ws.get_message())
            update = message.get("params", {}).get("update", {})
            if update.get("sessionUpdate") == "agent_message_chunk":
                got += len(update["content"]["text"])
                session["frames"] += 1


async def clients(url: str, count: int, answer: int, acp: bool) -> None:
    start = trio.Event()
    readies = [trio.Event() for _ in range(count)]
    connecting = trio.CapacityLimiter(CONNECTING)
    async with trio.open_nursery() as nursery:
        session: dict[str, Any] = {"acp": acp, "created": trio.Event(), "nursery": nursery, "frames": 0}
        for index, ready in enumerate(readies):
            nursery.start_soon(_watch, url, answer, ready, start, session, index == 0, connecting)
        for ready in readies:
            await ready.wait()
        await trio.sleep(0.2)  # the loads' replies and history are sent
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        start.set()
    print(f"done {session['frames']}", flush=True)


if __name__ == "__main__":
    url, count, answer = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    trio.run(clients, url, count, answer, "--raw" not in sys.argv)
