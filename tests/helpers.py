"""Small builders that keep tests readable."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio

from agentrio import AssistantMessage, Text, Tool, ToolCall, ToolResult

_ids = itertools.count(1)


def say(text: str, **fields) -> AssistantMessage:
    return AssistantMessage([Text(text)], **fields)


def calls(*calls: tuple[str, dict], text: str | None = None, **fields) -> AssistantMessage:
    parts = [Text(text)] if text else []
    parts += [ToolCall(f"call_{next(_ids)}", name, args) for name, args in calls]
    return AssistantMessage(parts, **fields)


def sleeper(name: str = "sleep", *, mode: str = "parallel", log: list | None = None) -> Tool:
    """A tool that sleeps ``seconds`` and logs when it starts and ends."""

    async def execute(args, ctx):
        if log is not None:
            log.append(("start", args["tag"], trio.current_time()))
        await trio.sleep(args["seconds"])
        if log is not None:
            log.append(("end", args["tag"], trio.current_time()))
        return ToolResult(f"slept {args['tag']}")

    return Tool(
        name,
        "Sleep for a while.",
        {
            "type": "object",
            "properties": {"seconds": {"type": "number"}, "tag": {"type": "string"}},
            "required": ["seconds", "tag"],
        },
        execute,
        execution_mode=mode,
    )


def echo_tool(name: str = "echo", *, mode: str = "parallel") -> Tool:
    async def execute(args, ctx):
        return f"echo: {args['text']}"

    return Tool(
        name,
        "Echo the text.",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        execute,
        execution_mode=mode,
    )


def start_run(nursery, agent, prompt: str) -> list:
    """Start ``agent.run(prompt)`` in ``nursery``; its result lands in the
    returned list when the run ends."""
    results = []

    async def run():
        results.append(await agent.run(prompt))

    nursery.start_soon(run)
    return results


@asynccontextmanager
async def counting_switches() -> AsyncIterator[Callable[[], int]]:
    """A bystander task that counts its turns to run: the callable yielded
    says how many it has had so far, so a test sees how often the code under
    test let other tasks run."""
    ran = 0

    async def bystander():
        nonlocal ran
        while True:
            await trio.lowlevel.checkpoint()
            ran += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(bystander)
        await trio.lowlevel.checkpoint()  # the bystander is running
        yield lambda: ran
        nursery.cancel_scope.cancel()
