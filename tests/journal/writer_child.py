"""One of several processes writing their own session to one store.

    python -m tests.journal.writer_child KIND LOCATION SESSION TURNS

Prints OPEN once the store is open, waits for a line on stdin, runs TURNS
turns of one tool call each, and prints DONE.
"""

from __future__ import annotations

import sys

import trio

from agentrio import AgentSpec, Runtime, ScriptedModel

from ..helpers import calls, echo_tool, say
from .places import Place


async def main(kind: str, location: str, session_id: str, turns: str) -> None:
    turns = int(turns)
    replies = []
    for turn in range(turns):
        replies += [calls(("echo", {"text": f"{session_id} {turn}"})), say(f"{session_id} done {turn}")]
    model = ScriptedModel(replies)
    async with Runtime(Place(kind, location)()) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[echo_tool(mode="exclusive")]), session_id)
        print("OPEN", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        for turn in range(turns):
            result = await agent.run(f"turn {turn}")
            assert result.stop_reason == "completed", result.error
    print("DONE", flush=True)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
