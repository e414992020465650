"""Gateway fan-out: many WebSocket clients watching one streaming session.

    python bench/gateway_fanout.py [--clients 100] [--updates 2000] [--runs 5] [--quick] [--json]
    python bench/gateway_fanout.py --stalled [--runs 7] [--megabytes 3]

**Fan-out** (the default). An in-process ``agentrio serve`` gateway
(trio-websocket on loopback) whose agent streams an answer of ``--updates``
text deltas to one session, watched by ``--clients`` WebSocket clients (one
prompts, the others ``session/load`` it first). The clients run in a
subprocess, so this process's CPU time is the server's: the agent's turn,
the ACP mapping, the outboxes and the frames. The floor is the least a
server does for the same clients: for each delta, the same
``session/update`` notification encoded once (``json.dumps``) and sent as a
frame to every client (trio-websocket), one after the other. Figure: CPU
time per delta per client, median [min–max] of the runs, ours and the
floor alternating (target: ours ≤ 2× the floor). A delta counts once
however it travels: merged with others for a client that lags, or alone.

**Stalled client** (``--stalled``): what a stalled WebSocket client costs
the others. A reader client prompts and reads every update; the figure is
the time from its prompt to the prompt's response, "alone" (the peer) and
"beside a stalled client" that loaded the same session and never reads,
until the gateway drops it (close 1013) when its outbox is full. Printed:
median and spread (min-max) of wall time and of this process's CPU time
(server and clients together), and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio
import trio_websocket
from _measure import RUNS, Spread, header
from _rows import Row, emit, spread_row
from _ws_clients import _call

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrio import AgentSpec, AssistantMessage, MemoryStore, ScriptedModel, Text
from agentrio.gateway import open_hub
from agentrio.gateway.websocket import WebSocketOptions, serve_websocket

TOKEN = "bench"


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


def stalled_main(args: argparse.Namespace) -> None:
    logging.getLogger("agentrio.gateway").setLevel(logging.ERROR)  # each run drops the stalled client
    lines = int(args.megabytes * 1000)
    text = "".join(f"line {i:06d} " + "x" * 988 + "\n" for i in range(lines))
    results: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for run in range(args.runs):
        for stalled in (False, True) if run % 2 == 0 else (True, False):
            results[stalled].append(trio.run(one_case, text, stalled))
    print(
        f"{args.megabytes:g} MB streamed to one reader, {args.runs} runs "
        f"(python bench/gateway_fanout.py --stalled --runs {args.runs} --megabytes {args.megabytes:g})"
    )
    for stalled, label in ((False, "alone"), (True, "beside a stalled client")):
        walls = [w for w, _ in results[stalled]]
        cpus = [c for _, c in results[stalled]]
        print(f"  {label:<24} wall {summary(walls)}   cpu {summary(cpus)}")
    ratio = statistics.median(w for w, _ in results[True]) / statistics.median(w for w, _ in results[False])
    print(f"  ratio stalled/alone (wall medians): {ratio:.2f}")


# -- fan-out ------------------------------------------------------------------------

TARGET = 2.0
#: Characters of each delta.
DELTA = 16
#: The floor's session id: any string of the same length as ours.
FLOOR_SESSION = "sess_" + "0" * 16


def _update(session_id: str, text: str) -> dict:
    """The notification the gateway sends for one text delta."""
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session_id,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
        },
    }


def _answer(updates: int) -> str:
    return "".join(f"{i:0{DELTA - 1}d} " for i in range(updates))


async def _timed_turn(
    url: str, clients_count: int, answer: int, acp: bool, go: trio.Event | None
) -> tuple[float, int]:
    """Start the clients' process, and the CPU time of this process from
    the clients' "ready" to their "done"."""
    process = await trio.lowlevel.open_process(
        [
            sys.executable,
            str(Path(__file__).with_name("_ws_clients.py")),
            url,
            str(clients_count),
            str(answer),
        ]
        + ([] if acp else ["--raw"]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    lines = _lines(process.stdout)
    assert await anext(lines) == "ready"
    cpu = time.process_time()
    await process.stdin.send_all(b"go\n")
    if go is not None:
        go.set()
    done, frames = (await anext(lines)).split()
    assert done == "done"
    cpu = time.process_time() - cpu
    await process.wait()
    return cpu, int(frames)


async def _lines(stream: trio.abc.ReceiveStream):
    buffer = b""
    while True:
        while b"\n" not in buffer:
            data = await stream.receive_some()
            if not data:
                return
            buffer += data
        line, _, buffer = buffer.partition(b"\n")
        yield line.decode()


async def ours_fanout(clients_count: int, updates: int) -> tuple[float, int]:
    text = _answer(updates)
    model = ScriptedModel([AssistantMessage([Text(text)])], chunk_size=DELTA)
    workspace = Path(tempfile.mkdtemp())
    async with open_hub(MemoryStore(), lambda cwd: AgentSpec("bench", model), workspace) as hub:
        listeners = await hub.nursery.start(serve_websocket, hub, WebSocketOptions(TOKEN), "127.0.0.1", 0)
        url = f"ws://127.0.0.1:{listeners[0].socket.getsockname()[1]}/acp?token={TOKEN}"
        cpu = await _timed_turn(url, clients_count, len(text), True, None)
        hub.nursery.cancel_scope.cancel()
    return cpu


async def floor_fanout(clients_count: int, updates: int) -> tuple[float, int]:
    """Each delta's notification encoded once and sent to every client."""
    text = _answer(updates)
    connected: list[trio_websocket.WebSocketConnection] = []
    go = trio.Event()
    finished = trio.Event()

    async def handler(request: trio_websocket.WebSocketRequest) -> None:
        ws = await request.accept()
        connected.append(ws)
        await finished.wait()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio_websocket.serve_websocket, handler, "127.0.0.1", 0, ssl_context=None)
        )
        url = f"ws://127.0.0.1:{listeners.port}/"

        async def send_all() -> None:
            await go.wait()
            for start in range(0, len(text), DELTA):
                frame = json.dumps(_update(FLOOR_SESSION, text[start : start + DELTA]))
                for ws in connected:
                    await ws.send_message(frame)

        nursery.start_soon(send_all)
        cpu = await _timed_turn(url, clients_count, len(text), False, go)
        finished.set()
        nursery.cancel_scope.cancel()
    return cpu


def fanout(clients_count: int, updates: int, runs: int) -> dict[str, dict[str, Spread]]:
    results: dict[str, list[float]] = {"ours": [], "floor": []}
    for run in range(runs):
        order = (("ours", ours_fanout), ("floor", floor_fanout))
        for name, fn in order if run % 2 else order[::-1]:
            gc.collect()
            cpu, frames = trio.run(fn, clients_count, updates)
            results[name].append((cpu / (updates * clients_count) * 1e6, frames / clients_count))
    return {
        name: {"cpu": Spread(tuple(v[0] for v in values)), "frames": Spread(tuple(v[1] for v in values))}
        for name, values in results.items()
    }


def rows(runs: int = RUNS, quick: bool = False, clients_count: int = 100, updates: int = 2000) -> list[Row]:
    if quick:
        clients_count, updates = 5, 50
    figures = fanout(clients_count, updates, runs)
    return [
        spread_row(
            "gateway_fanout",
            f"gateway CPU per update per client, {clients_count} WebSocket clients, {updates:,} updates",
            "agentrio",
            figures["ours"]["cpu"].values,
            "µs",
            reference="encode once, send each frame",
            reference_values=figures["floor"]["cpu"].values,
            target=f"<= {TARGET:g}",
            note=f"frames a client got: {figures['ours']['frames'].median:,.0f} (deltas merged while it lags) "
            f"vs {figures['floor']['frames'].median:,.0f}",
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=None, help="runs (default: 5; 7 with --stalled)")
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--updates", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that it runs")
    parser.add_argument("--json", action="store_true", help="the rows as JSON, for bench/report.py")
    parser.add_argument("--stalled", action="store_true", help="the stalled-client case instead")
    parser.add_argument("--megabytes", type=float, default=3, help="with --stalled: the answer's size")
    args = parser.parse_args()
    if args.stalled:
        args.runs = args.runs or 7
        stalled_main(args)
        return
    args.runs = args.runs or RUNS
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    result = rows(args.runs, args.quick, args.clients, args.updates)
    if not args.json:
        header("Gateway fan-out: WebSocket clients watching one streaming session", args.runs)
    emit(result, args.json)


if __name__ == "__main__":
    main()
