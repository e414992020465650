"""Streaming at scale: many agents at once, each streaming a long answer
over real HTTP, against a bare reader of the same bytes.

    python bench/stream_scale.py [--agents 1000] [--tokens 2000] [--rate 25] [--runs 5] [--quick] [--json]

A loopback server (a subprocess of this script, so its CPU time is not
counted) answers every request with an OpenAI Chat Completions event stream
of ``--tokens`` tokens, paced at ``--rate`` tokens a second per stream
(five tokens a write), each token carrying the server's clock
(``time.monotonic``, one clock for every process of the machine) when it
was written. ``--agents`` streams run at once:

* ours: an agent each, in one ``Runtime`` (``MemoryStore``), through the
  real OpenAI Chat adapter (``httpx``, the SSE decoder, the stream mapper,
  the agent's turn), with one subscriber each reading every event;
* the floor: a task each doing what the least correct reader does with the
  same bytes: an ``httpx`` streaming POST, the body split into events at
  blank lines, each event's JSON parsed and its text taken.

Both read through one ``httpx.AsyncClient`` made the same way: ours the
Runtime's shared client, the floor ``agentrio.models.http.new_client()``,
which makes that client (``DEFAULT_LIMITS``: no cap on connections, at most
20 idle ones kept; ``DEFAULT_TIMEOUT``). Figures, median
[min–max] of the runs, ours and the floor alternating in each run:

* CPU time of this process per streamed token (target: ours ≤ 1.5× the floor);
* delivery latency, p99 over every token: from the server's write to the
  subscriber (ours) or the parser (the floor) seeing it; the loopback
  socket's part is the same in both, so the difference is what the path
  adds (target: ours ≤ 2× the floor).

At full size each side of a run reads 2,000,000 tokens: 80 s of streaming
at the default rate, and about as much CPU time (the floor costs some 30 µs
a token), so the default 5 runs take 15 minutes or more. A faster rate
would not shorten that much: the process would then be busy all the time
and the latency would measure its queue. ``--agents`` and ``--tokens``
give a quicker look; the latency's p99 of short streams is mostly the
start of 1,000 streams at once, since every stream's first tokens wait for
it.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import trio
from _measure import RUNS, Spread, header
from _rows import Row, emit, spread_row

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrio import AgentSpec, MemoryStore, Runtime
from agentrio.events import MessageUpdate, TurnEnd
from agentrio.models.events import TextDelta
from agentrio.models.http import new_client
from agentrio.models.openai_chat import OpenAIChat

TARGET_CPU = 1.5
TARGET_LATENCY = 2.0
#: Tokens a write of the server.
BURST = 5

# -- the server ---------------------------------------------------------------------


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


async def _serve_one(stream: trio.abc.Stream, *, tokens: int, interval: float) -> None:
    """Answer each request on the connection with a paced event stream."""
    buffer = b""
    async with stream:
        while True:
            while b"\r\n\r\n" not in buffer:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(buffer) < length:
                buffer += await stream.receive_some(65536)
            buffer = buffer[length:]
            await stream.send_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            )

            async def send(payload: bytes) -> None:
                await stream.send_all(b"%x\r\n%s\r\n" % (len(payload), payload))

            await send(_event({"model": "bench", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}))
            for start in range(0, tokens, BURST):
                stamp = f"t{time.monotonic():.6f} "
                count = min(BURST, tokens - start)
                await send(
                    b"".join(
                        _event({"choices": [{"index": 0, "delta": {"content": stamp}}]}) for _ in range(count)
                    )
                )
                await trio.sleep(interval)
            usage = {"prompt_tokens": 10, "completion_tokens": tokens}
            await send(
                _event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage})
                + b"data: [DONE]\n\n"
            )
            await stream.send_all(b"0\r\n\r\n")


async def serve(tokens: int, rate: float) -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1", backlog=4096)
    print(listeners[0].socket.getsockname()[1], flush=True)
    await trio.serve_listeners(functools.partial(_serve_one, tokens=tokens, interval=BURST / rate), listeners)


# -- the readers --------------------------------------------------------------------


def _stamps(text: str, now: float, latencies: list[float]) -> int:
    """Record the latency of each token in ``text``; returns how many."""
    count = 0
    for token in text.split():
        latencies.append(now - float(token[1:]))
        count += 1
    return count


async def floor_stream(client: httpx.AsyncClient, url: str, latencies: list[float]) -> int:
    """The least a correct reader does: POST, split the body into events,
    parse each event's JSON, take its text."""
    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "go"}], "stream": True})
    tokens = 0
    rest = b""
    async with client.stream(
        "POST", url, content=body, headers={"content-type": "application/json"}
    ) as response:
        async for chunk in response.aiter_bytes():
            events = (rest + chunk).split(b"\n\n")
            rest = events.pop()
            now = time.monotonic()
            for event in events:
                data = event[6:]
                if data == b"[DONE]":
                    continue
                for choice in json.loads(data)["choices"]:
                    if text := choice["delta"].get("content"):
                        tokens += _stamps(text, now, latencies)
    return tokens


async def floor(url: str, agents: int, latencies: list[float]) -> int:
    counts: list[int] = []
    async with new_client() as client:

        async def one() -> None:
            counts.append(await floor_stream(client, url, latencies))

        async with trio.open_nursery() as nursery:
            for _ in range(agents):
                nursery.start_soon(one)
    return sum(counts)


async def ours(url: str, agents: int, latencies: list[float]) -> int:
    counts: list[int] = []
    model = OpenAIChat("bench", base_url=url.removesuffix("/chat/completions"), api_key="x")
    async with Runtime(MemoryStore()) as rt:

        async def one() -> None:
            agent = await rt.create(AgentSpec("bench", model))
            tokens = 0
            async with trio.open_nursery() as nursery, agent.subscribe() as events:

                async def read() -> None:
                    # Every event up to the turn's end, however late.
                    nonlocal tokens
                    async for event in events:
                        if isinstance(event, MessageUpdate) and isinstance(event.delta, TextDelta):
                            tokens += _stamps(event.delta.text, time.monotonic(), latencies)
                        elif isinstance(event, TurnEnd):
                            return

                nursery.start_soon(read)
                await agent.run("go")
            counts.append(tokens)

        async with trio.open_nursery() as nursery:
            for _ in range(agents):
                nursery.start_soon(one)
    return sum(counts)


# -- measuring ----------------------------------------------------------------------


def _p99(values: list[float]) -> float:
    values.sort()
    return values[min(len(values) - 1, int(len(values) * 0.99))]


def one_run(reader: Any, url: str, agents: int, tokens: int) -> dict[str, float]:
    latencies: list[float] = []
    gc.collect()
    start = time.process_time()
    seen = trio.run(reader, url, agents, latencies)
    cpu = time.process_time() - start
    if seen != agents * tokens:
        raise SystemExit(f"{reader.__name__}: {seen:,} tokens seen of {agents * tokens:,}")
    return {"cpu": cpu / seen, "p99": _p99(latencies)}


def measure(agents: int, tokens: int, rate: float, runs: int) -> dict[str, dict[str, Spread]]:
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--tokens", str(tokens), "--rate", str(rate)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1/chat/completions"
        results: dict[str, list[dict[str, float]]] = {"ours": [], "floor": []}
        for run in range(runs):
            order = (("ours", ours), ("floor", floor)) if run % 2 else (("floor", floor), ("ours", ours))
            for name, reader in order:
                results[name].append(one_run(reader, url, agents, tokens))
    finally:
        server.terminate()
        server.wait()
    return {
        name: {key: Spread(tuple(r[key] for r in rs)) for key in ("cpu", "p99")}
        for name, rs in results.items()
    }


def rows(
    runs: int = RUNS, quick: bool = False, agents: int = 1000, tokens: int = 2000, rate: float = 25.0
) -> list[Row]:
    if quick:
        agents, tokens, rate = 20, 50, 500.0
    figures = measure(agents, tokens, rate, runs)
    what = f"{agents:,} agents × {tokens:,} tokens at {rate:g} tokens/s each"
    return [
        spread_row(
            "stream_scale",
            f"CPU per streamed token, {what}",
            "agentrio",
            [v * 1e6 for v in figures["ours"]["cpu"].values],
            "µs",
            reference="bare httpx SSE reader",
            reference_values=[v * 1e6 for v in figures["floor"]["cpu"].values],
            target=f"<= {TARGET_CPU:g}",
        ),
        spread_row(
            "stream_scale",
            f"delivery latency p99, server write to subscriber, {what}",
            "agentrio",
            [v * 1e3 for v in figures["ours"]["p99"].values],
            "ms",
            reference="bare httpx SSE reader",
            reference_values=[v * 1e3 for v in figures["floor"]["p99"].values],
            target=f"<= {TARGET_LATENCY:g}",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=25.0, help="tokens a second of each stream")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that it runs")
    parser.add_argument("--json", action="store_true", help="the rows as JSON, for bench/report.py")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        trio.run(serve, args.tokens, args.rate)
        return
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    result = rows(args.runs, args.quick, args.agents, args.tokens, args.rate)
    if not args.json:
        header(
            "Streaming at scale: agents streaming over loopback HTTP vs a bare httpx SSE reader", args.runs
        )
    emit(result, args.json)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
