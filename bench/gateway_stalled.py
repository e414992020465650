"""What stalled WebSocket clients cost the gateway in memory.

    python bench/gateway_stalled.py [--clients 10] [--runs 5]

An in-process ``agentrio serve`` gateway (default options, except that no
client is dropped for stalling: the figure is what waits) whose session
runs one turn: a tool that reports 8 MB of output in 4 KB pieces (as bash
does), then a streamed answer of 4 MB. ``--clients`` clients load the
session and then read nothing; one more client prompts and reads. Printed:
the median (over ``--runs`` runs, each in a fresh process) of how much this
process's resident memory grew during the turn (the highest VmRSS seen,
sampled every 10 ms, less the VmRSS before the prompt), and how many of the
stalled clients were dropped (1013).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import trio
import trio_websocket

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import trio.lowlevel

from agentrio import AgentSpec, AssistantMessage, MemoryStore, ScriptedModel, Text, Tool, ToolCall, ToolResult
from agentrio.gateway import open_hub
from agentrio.gateway.websocket import WebSocketOptions, serve_websocket

TOKEN = "bench"
OUTPUT_PIECES, PIECE = 2000, 4096


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def _call(ws, request_id: int, method: str, params: dict) -> dict:
    await ws.send_message(
        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    )
    while True:
        message = json.loads(await ws.get_message())
        if message.get("id") == request_id and "method" not in message:
            return message


async def report(args, ctx):
    for i in range(OUTPUT_PIECES):
        ctx.report({"stream": "stdout", "text": f"{i:06d} " + "o" * (PIECE - 8) + "\n"})
        await trio.lowlevel.checkpoint()
    return ToolResult("done")


async def one_run(clients: int) -> tuple[int, int]:
    tool = Tool("out", "Prints.", {"type": "object", "properties": {}}, report)
    answer = "".join(f"line {i:06d} " + "x" * 988 + "\n" for i in range(4000))
    model = ScriptedModel(
        [AssistantMessage([ToolCall("o1", "out", {})]), AssistantMessage([Text(answer)])], chunk_size=64
    )
    workspace = Path(tempfile.mkdtemp())
    async with open_hub(MemoryStore(), lambda cwd: AgentSpec("bench", model, tools=[tool]), workspace) as hub:
        listeners = await hub.nursery.start(
            serve_websocket, hub, WebSocketOptions(TOKEN, stall_timeout=3600), "127.0.0.1", 0
        )
        url = f"ws://127.0.0.1:{listeners[0].socket.getsockname()[1]}/acp?token={TOKEN}"
        async with trio_websocket.open_websocket_url(url) as reader, trio.open_nursery() as nursery:
            await _call(reader, 1, "initialize", {"protocolVersion": 1})
            session_id = (await _call(reader, 2, "session/new", {"cwd": "", "mcpServers": []}))["result"][
                "sessionId"
            ]
            stalled = []
            for _ in range(clients):
                ws = await trio_websocket.connect_websocket_url(nursery, url, message_queue_size=0)
                for request_id, method, params in (
                    (1, "initialize", {"protocolVersion": 1}),
                    (2, "session/load", {"sessionId": session_id, "cwd": "", "mcpServers": []}),
                ):
                    await ws.send_message(
                        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
                    )
                stalled.append(ws)
            await trio.sleep(0.2)
            before = peak = rss()
            done = trio.Event()

            async def sample() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, rss())
                    await trio.sleep(0.01)

            nursery.start_soon(sample)
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
            response = await _call(reader, 3, "session/prompt", prompt)
            done.set()
            assert response["result"]["stopReason"] == "end_turn", response
            session = hub.sessions[session_id]
            dropped = clients - sum(1 for p in session.peers if p.dropped is None) + 1
            nursery.cancel_scope.cancel()
    return peak - before, dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.getLogger("agentrio.gateway").setLevel(logging.ERROR)
    if args.one:
        print(json.dumps(trio.run(one_run, args.clients)))
        return
    results = [
        json.loads(
            subprocess.run(
                [sys.executable, __file__, "--one", "--clients", str(args.clients)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        for _ in range(args.runs)
    ]
    grown = [g / 2**20 for g, _ in results]
    print(
        f"{args.clients} stalled clients, {args.runs} runs "
        f"(python bench/gateway_stalled.py --clients {args.clients} --runs {args.runs})"
    )
    print(
        f"  memory grown during the turn: median {statistics.median(grown):.1f} MiB "
        f"(spread {min(grown):.1f}-{max(grown):.1f}); dropped: {[d for _, d in results]}"
    )


if __name__ == "__main__":
    main()
