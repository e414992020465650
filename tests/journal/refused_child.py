"""A process whose store refuses a commit while a tool's command runs.

    python -m tests.journal.refused_child DATABASE WORKSPACE MARKER

An agent on session ``s1`` runs the bash tool on ``sleep MARKER``; the
process prints RUNNING once its run has started. At a line on stdin it
steers the agent, which commits; the test has had another writer take the
session's next records meanwhile, so that commit is refused. It prints
REFUSED and the error, then, once the run has ended, END, the run's stop
reason, the seconds from the refusal to the end, and the run's error. Then
it closes the runtime and ends normally.
"""

from __future__ import annotations

import sys

import trio

from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore, StoreError
from agentrio.tools.builtin import bash

from ..helpers import calls, say


async def main(database: str, workspace: str, marker: str) -> None:
    model = ScriptedModel([calls(("bash", {"command": f"sleep {marker}"})), say("never said")])
    spec = AgentSpec("a", model, tools=[bash(workspace, grace=1.0)])
    async with Runtime(SQLiteStore(database)) as rt:
        agent = await rt.create(spec, "s1")
        results = []
        ended = trio.Event()

        async def run() -> None:
            results.append(await agent.run("sleep a while"))
            ended.set()

        rt.nursery.start_soon(run)
        print("RUNNING", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        refused_at = trio.current_time()
        try:
            await agent.steer("a line typed while the command runs")
        except StoreError as exc:
            print("REFUSED", exc, flush=True)
        await ended.wait()
        (result,) = results
        elapsed = trio.current_time() - refused_at
        print("END", result.stop_reason, f"{elapsed:.2f}", result.error, flush=True)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
