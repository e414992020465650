"""What a stalled WebSocket client costs the others.

    python bench/gateway_fanout.py [--runs 7] [--megabytes 3]

An in-process ``agentrio serve`` gateway (trio-websocket on loopback) whose
agent streams ``--megabytes`` of text to one session. A reader client
prompts and reads every update; the figure is the time from its prompt to
the prompt's response. Two cases in each run, in alternating order:

* "alone": the reader is the session's only client (the peer);
* "beside a stalled client": a second client loaded the same session and
  never reads, until the gateway drops it (close 1013) when its outbox is
  full.

Printed: median and spread (min-max) over the runs of wall time and of this
process's CPU time (server and clients together), and the ratio of the
medians (stalled / alone).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio
import trio_websocket

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrio import AgentSpec, AssistantMessage, MemoryStore, ScriptedModel, Text
from agentrio.gateway import open_hub
from agentrio.gateway.websocket import WebSocketOptions, serve_websocket

TOKEN = "bench"


async def _call(ws, request_id: int, method: str, params: dict) -> dict:
    await ws.send_message(
        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    )
    while True:
        message = json.loads(await ws.get_message())
        if message.get("id") == request_id and "method" not in message:
            return message


async def one_case(text: str, stalled: bool) -> tuple[float, float]:
    model = ScriptedModel([AssistantMessage([Text(text)])], chunk_size=1024)
    workspace = Path(tempfile.mkdtemp())
    async with open_hub(MemoryStore(), lambda cwd: AgentSpec("bench", model), workspace) as hub:
        options = WebSocketOptions(TOKEN, queue_bytes=1024 * 1024)
        listeners = await hub.nursery.start(serve_websocket, hub, options, "127.0.0.1", 0)
        url = f"ws://127.0.0.1:{listeners[0].socket.getsockname()[1]}/acp?token={TOKEN}"
        async with trio_websocket.open_websocket_url(url) as reader:
            await _call(reader, 1, "initialize", {"protocolVersion": 1})
            session_id = (await _call(reader, 2, "session/new", {"cwd": "", "mcpServers": []}))["result"][
                "sessionId"
            ]
            async with trio_websocket.open_websocket_url(url) as other:
                if stalled:
                    for request_id, method, params in (
                        (1, "initialize", {"protocolVersion": 1}),
                        (2, "session/load", {"sessionId": session_id, "cwd": "", "mcpServers": []}),
                    ):
                        await other.send_message(
                            json.dumps(
                                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
                            )
                        )
                    await trio.sleep(0.1)
                wall, cpu = time.perf_counter(), time.process_time()
                prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "talk"}]}
                response = await _call(reader, 3, "session/prompt", prompt)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                assert response["result"]["stopReason"] == "end_turn", response
                await other.aclose()
    return wall, cpu


def summary(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f}s (spread {min(values):.3f}-{max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--megabytes", type=float, default=3)
    args = parser.parse_args()
    logging.getLogger("agentrio.gateway").setLevel(logging.ERROR)  # each run drops the stalled client
    lines = int(args.megabytes * 1000)
    text = "".join(f"line {i:06d} " + "x" * 988 + "\n" for i in range(lines))
    results: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for run in range(args.runs):
        for stalled in (False, True) if run % 2 == 0 else (True, False):
            results[stalled].append(trio.run(one_case, text, stalled))
    print(
        f"{args.megabytes:g} MB streamed to one reader, {args.runs} runs "
        f"(python bench/gateway_fanout.py --runs {args.runs} --megabytes {args.megabytes:g})"
    )
    for stalled, label in ((False, "alone"), (True, "beside a stalled client")):
        walls = [w for w, _ in results[stalled]]
        cpus = [c for _, c in results[stalled]]
        print(f"  {label:<24} wall {summary(walls)}   cpu {summary(cpus)}")
    ratio = statistics.median(w for w, _ in results[True]) / statistics.median(w for w, _ in results[False])
    print(f"  ratio stalled/alone (wall medians): {ratio:.2f}")


if __name__ == "__main__":
    main()
