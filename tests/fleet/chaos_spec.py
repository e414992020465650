"""The spec the fleet's worker processes run (``--spec tests.fleet.chaos_spec:SPEC``):
a slow model that calls one tool, then answers, and logs every request it
serves (``FLEET_LOG``), so that a test can tell which process ran which
session when."""

from __future__ import annotations

import os
import secrets
import time

import trio

from agentrio import AgentSpec, AssistantMessage, ScriptedModel, Text, ToolCall, UserMessage, tool

#: Seconds each model request takes, and each tool call.
DELAY = float(os.environ.get("FLEET_DELAY", "0.3"))
TOOL_DELAY = float(os.environ.get("FLEET_TOOL_DELAY", DELAY))
#: Whether a prompt is answered through a tool call (else at once).
TOOL = os.environ.get("FLEET_TOOL", "1") == "1"


def _log(line: str) -> None:
    path = os.environ.get("FLEET_LOG")
    if path:
        # One write of one short line: appends from several processes stay whole.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{line}\n".encode())
        finally:
            os.close(fd)


async def reply(request) -> AssistantMessage:
    """A tool call for a new prompt, then the answer, which names the prompt."""
    session = request.messages[0].text.split()[0]
    prompt = next(m for m in reversed(request.messages) if isinstance(m, UserMessage)).text
    _log(f"S {os.getpid()} {session} {time.time():.6f}")
    if DELAY:
        await trio.sleep(DELAY)
    _log(f"E {os.getpid()} {session} {time.time():.6f}")
    if TOOL and isinstance(request.messages[-1], UserMessage):
        return AssistantMessage([ToolCall(f"call_{secrets.token_hex(6)}", "work", {"what": prompt})])
    return AssistantMessage([Text(f"answer to {prompt}")])


@tool
async def work(what: str) -> str:
    """Work on something for a while."""
    _log(f"T {os.getpid()} {what.split()[0]} {time.time():.6f}")
    await trio.sleep(TOOL_DELAY)
    return f"worked on {what}"


SPEC = AgentSpec("chaos", ScriptedModel([reply] * 100_000, strict=True), tools=[work])
