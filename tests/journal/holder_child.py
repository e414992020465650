"""A process that has one SQLite session open for writing, through a Runtime.

    python -m tests.journal.holder_child DATABASE SESSION [MARKER]

Opens (creates) the session, then, with MARKER, starts ``sleep MARKER`` as
a plain subprocess of its own that does not stop with it (unlike a tool's,
which is supervised). Prints HOLDING, waits until stdin ends, then closes
the runtime normally and prints DONE.
"""

from __future__ import annotations

import subprocess
import sys

import trio

from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore


async def main(database: str, session_id: str, marker: str | None = None) -> None:
    async with Runtime(SQLiteStore(database)) as rt:
        await rt.create(AgentSpec("a", ScriptedModel([])), session_id)
        if marker is not None:
            # Every descriptor it may inherit, inherited: the lock must not be.
            subprocess.Popen(["sleep", marker], close_fds=False, start_new_session=True)
        print("HOLDING", flush=True)
        while await trio.to_thread.run_sync(sys.stdin.readline):
            pass
    print("DONE", flush=True)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
