"""What a call of an MCP tool costs over HTTP against stdio.

    python bench/mcp_overhead.py [--calls 50] [--runs 7]

One server process per transport, the same ``echo`` tool in each (the SDK's
``MCPServer``; over HTTP under uvicorn on loopback), each held by
``mcp_server`` as an agent would hold it. Each run makes ``--calls`` calls
one after the other through each, in alternating order. Per call: wall time
(the round trip: this process, the transport, the server) and the CPU time
of this process; medians and spread (min-max) over ``--runs`` runs, the
ratio of the median wall times and their difference, the overhead HTTP adds.
"""

from __future__ import annotations

import argparse
import shlex
import socket
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrio.tools import Tool, ToolContext
from agentrio.tools.mcp import mcp_server

SERVER = str(Path(__file__).with_name("_mcp_echo_server.py"))
CTX = ToolContext("bench", "bench", "call", "echo", report=lambda progress: None)


async def http_server(nursery: trio.Nursery) -> str:
    """Start the HTTP server on a free loopback port; its URL once it listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, SERVER, "--http", str(port)]
    nursery.start_soon(
        partial(trio.run_process, command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    )
    with trio.fail_after(60):
        while True:
            try:
                await (await trio.open_tcp_stream("127.0.0.1", port)).aclose()
                return f"http://127.0.0.1:{port}/mcp"
            except OSError:
                await trio.sleep(0.05)


async def measure(tool: Tool, calls: int) -> tuple[float, float]:
    wall, used = time.perf_counter(), time.process_time()
    for number in range(calls):
        result = await tool.execute({"text": f"call {number}"}, CTX)
        assert not result.is_error, result
    return (time.perf_counter() - wall) / calls, (time.process_time() - used) / calls


async def main(calls: int, runs: int) -> None:
    async with trio.open_nursery() as nursery:
        url = await http_server(nursery)
        async with (
            mcp_server(sys.executable, [SERVER], name="stdio") as stdio,
            mcp_server(url=url, name="http") as http,
        ):
            tools = {"stdio": stdio.tools_by_name()["echo"], "http": http.tools_by_name()["echo"]}
            await measure(tools["stdio"], 3)  # warm both up: connections, caches
            await measure(tools["http"], 3)
            figures: dict[str, list[tuple[float, float]]] = {name: [] for name in tools}
            for run in range(runs):
                for name in sorted(tools, reverse=run % 2 == 1):
                    figures[name].append(await measure(tools[name], calls))
        nursery.cancel_scope.cancel()
    print(f"  command: python bench/mcp_overhead.py {shlex.join(sys.argv[1:])}".rstrip())
    medians = {}
    for name, results in figures.items():
        walls, cpus = [w * 1000 for w, _ in results], [c * 1000 for _, c in results]
        medians[name] = statistics.median(walls)
        print(
            f"{name:6} wall {medians[name]:6.2f} ms/call ({min(walls):.2f}-{max(walls):.2f}), "
            f"CPU {statistics.median(cpus):6.2f} ms/call ({min(cpus):.2f}-{max(cpus):.2f})"
        )
    print(
        f"http / stdio: {medians['http'] / medians['stdio']:.2f}x, "
        f"+{medians['http'] - medians['stdio']:.2f} ms/call (medians of {runs} runs of {calls} calls)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2 runs of 5 calls (a smoke test)")
    args = parser.parse_args()
    trio.run(main, *((5, 2) if args.quick else (args.calls, args.runs)))
