"""acplint's verdict on ``agentrio acp``: its failed tests and its findings.

    python bench/acplint_report.py [--tree PATH] [--no-shim] [--json FILE] [--wire FILE]

Runs acplint 0.1.0 (``pip install acplint``; its Python API, all 14
categories) against ``python -m agentrio acp`` from the source tree
``--tree`` (default: this one), through ``bench/acplint_shim.py``, which
translates acplint's own wire bugs (``--no-shim``: without it). The agent's
model is the fake OpenAI server of ``tests/fake_openai.py``, answering each
of acplint's fixed prompts as a model would, after a streamed thought: a
read, a write, ``echo hello``, a two-step ``todo`` plan, long answers that
are cancelled. It runs
with the CLI's default spec (coding tools and ``todo``), ``--permission
ask`` (acplint allows each request) and ``--sandbox off``, in a temporary
workspace and store. acplint waits fixed times (5 s collections, 10 s for
requests that never come), so a run takes about a minute.

Prints acplint's tests (passed / failed / errors), each failure, and its
findings (the capabilities it did not see); exit status 0. ``--wire``: every
message through the shim, a JSON line each (``[direction, message]``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acplint import ConformanceRunner  # type: ignore[import-untyped]
from acplint.report import ConformanceReport  # type: ignore[import-untyped]

from agentrio.messages import AssistantMessage, Text, Thinking, ToolCall
from tests.fake_openai import FakeRequest, Hang
from tests.gateway.acp_harness import FakeServerThread

#: What the model thinks before it answers a prompt (streamed as reasoning).
THOUGHT = Thinking("The request is clear; answering it directly.")

#: A file acplint's read prompt asks for, made in the workspace.
READ_ME = "acp_test.txt"


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    content = messages[-1].get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def answer(request: FakeRequest) -> AssistantMessage | Hang:
    """What a model would answer to acplint's prompts (it sends each of them
    with fixed words), thinking first; after a tool's result, a closing sentence."""
    messages = request.body["messages"]
    if messages[-1]["role"] == "tool":
        return AssistantMessage([Text("Done.")])
    text = _last_user_text(messages)
    call_id = f"call_{len(messages)}"

    def call(name: str, args: dict[str, Any], say: str) -> AssistantMessage:
        return AssistantMessage([THOUGHT, Text(say), ToolCall(call_id, name, args)], stop_reason="tool_use")

    if "very long essay" in text or "something complex" in text:
        return Hang(AssistantMessage([Text("Once upon a time, ")]))
    if match := re.search(r"Write '(\w+)' to /tmp/(\S+)", text):
        return call("write", {"path": match[2], "content": match[1]}, "Writing it.")
    if match := re.search(r"Create a file at /tmp/(\S+) with content '(\w+)'", text):
        return call("write", {"path": match[1], "content": match[2]}, "Creating it.")
    if match := re.search(r"Read (?:the file )?/tmp/(\S+?) and", text):
        return call("read", {"path": match[1]}, "Reading it.")
    if "echo hello" in text:
        return call("bash", {"command": "echo hello"}, "Running it.")
    if "plan" in text:
        todos = [
            {"content": "Read a file", "status": "in_progress", "priority": "high"},
            {"content": "Summarize it", "status": "pending"},
        ]
        return call("todo", {"todos": todos}, "Planning.")
    if match := re.search(r"Say '([^']+)'", text):
        return AssistantMessage([THOUGHT, Text(match[1])])
    return AssistantMessage([THOUGHT, Text("OK.")])


def run(tree: Path, shim: bool, wire: Path | None = None) -> tuple[ConformanceReport, float]:
    """acplint's report on the agent of ``tree``, and the seconds it took."""
    with tempfile.TemporaryDirectory(prefix="acplint-") as tmp, FakeServerThread([answer] * 500) as server:
        workspace = Path(tmp, "workspace")
        workspace.mkdir()
        (workspace / READ_ME).write_text("hello from the workspace\n")
        agent = [sys.executable, "-m", "agentrio", "acp", "--model", "openai:fake"]
        agent += ["--base-url", server.server.base_url, "--db", str(Path(tmp, "sessions.db"))]
        agent += ["--permission", "ask", "--sandbox", "off"]
        command = [sys.executable, str(ROOT / "bench" / "acplint_shim.py"), *agent] if shim else agent
        env = {**os.environ, "PYTHONPATH": str(tree), "XDG_CONFIG_HOME": tmp, "XDG_DATA_HOME": tmp}
        env.pop("OPENAI_API_KEY", None)
        if wire is not None:
            wire.write_text("")
            env["ACPLINT_SHIM_LOG"] = str(wire.resolve())
        start = time.perf_counter()
        report = ConformanceRunner(command, cwd=str(workspace), env=env).run_all()
        return report, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the agentrio source tree to run")
    parser.add_argument("--no-shim", action="store_true", help="talk to the agent without the shim")
    parser.add_argument("--json", type=Path, help="also write acplint's whole report there")
    parser.add_argument("--wire", type=Path, help="also write there every message through the shim")
    args = parser.parse_args()
    report, seconds = run(args.tree.resolve(), not args.no_shim, args.wire)
    results = report.results
    print(
        f"acplint on {args.tree}{'' if args.no_shim else ' (through bench/acplint_shim.py)'}: {seconds:.0f} s"
    )
    print(
        f"tests: {len(results)} | passed {len(report.passed)} | failed {len(report.failed)}"
        f" | errors {len(report.errors)} | skipped {len(report.skipped)} | {report.conformance_level.value}"
    )
    for result in report.failed + report.errors:
        print(f"  {result.status.value} [{result.category}] {result.name}: {result.message}")
    print(f"findings: {len(report.findings)}")
    for finding in report.findings:
        print(f"  {finding}")
    if args.json:
        args.json.write_text(json.dumps(report.to_dict(), indent=2, default=str))


if __name__ == "__main__":
    main()
