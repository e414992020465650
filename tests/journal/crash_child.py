"""A process to be killed: it runs an agent on a store up to the point a
scenario names, prints READY and waits for SIGKILL.

    python -m tests.journal.crash_child KIND LOCATION SCENARIO

(KIND and LOCATION as in ``places.Place``.)

The tools and the model stop inside the agent, so what the store holds when
the process dies is exactly what the agent's own durability barriers made
durable. Where a scenario stops between barriers (inside a model stream,
between turns) it first waits for the store's writer, so that the test
knows which records the store holds.
"""

from __future__ import annotations

import sys

import trio

from agentrio import AgentSpec, Hooks, Runtime, ScriptedModel, Store, Tool
from agentrio.models.events import TextDelta

from ..helpers import calls, echo_tool, say
from .places import Place

SESSION = "crashed"
EMPTY = {"type": "object", "properties": {}}


async def ready() -> None:
    print("READY", flush=True)
    await trio.sleep_forever()


def stopping_tool(name: str, mode: str, after: trio.Event | None = None) -> Tool:
    """A tool that stops the process while its body runs (once ``after`` is set)."""

    async def execute(args, ctx):
        if after is not None:
            await after.wait()
        await ready()

    return Tool(name, "Never returns.", EMPTY, execute, execution_mode=mode)


def signalling_tool(name: str, done: trio.Event) -> Tool:
    async def execute(args, ctx):
        done.set()
        return "finished"

    return Tool(name, "Returns at once.", EMPTY, execute)


async def during_model_stream(rt: Runtime, store: Store) -> None:
    agent = None

    async def on_stream(event):
        if isinstance(event, TextDelta):
            await agent.followup("queued while streaming")
            await store.sync(SESSION)
            await ready()

    model = ScriptedModel([say("a long answer that is still streaming when the process dies")], chunk_size=4)
    agent = await rt.create(AgentSpec("a", model, hooks=Hooks(on_assistant_stream=on_stream)), SESSION)
    await agent.run("first")


async def during_parallel_tool(rt: Runtime, store: Store) -> None:
    # ``blocker`` and ``quick`` both start; ``quick`` finishes, but its result
    # waits behind ``blocker`` (results commit in model order) and is only
    # recorded as finished; ``later``, exclusive, waits for both and never
    # starts. The process stops once the finished result is durable, as
    # another connection sees it.
    quick_done = trio.Event()
    quick_durable = trio.Event()

    async def watch_durability() -> None:
        await quick_done.wait()
        while not (await store.load_state(SESSION)).state.finished_results:
            await trio.sleep(0.01)
        quick_durable.set()

    model = ScriptedModel([calls(("blocker", {}), ("quick", {}), ("later", {}))])
    rt.nursery.start_soon(watch_durability)
    tools = [
        stopping_tool("blocker", "parallel", after=quick_durable),
        signalling_tool("quick", quick_done),
        stopping_tool("later", "exclusive"),
    ]
    agent = await rt.create(AgentSpec("a", model, tools=tools), SESSION)
    await agent.run("go")


async def during_exclusive_tool(rt: Runtime, store: Store) -> None:
    # ``before`` runs and is committed; ``exclusive`` stops the process;
    # ``after`` never starts.
    model = ScriptedModel(
        [calls(("echo", {"text": "before"}), ("exclusive", {}), ("echo", {"text": "after"}))]
    )
    tools = [echo_tool(), stopping_tool("exclusive", "exclusive")]
    agent = await rt.create(AgentSpec("a", model, tools=tools), SESSION)
    await agent.run("go")


async def between_turns(rt: Runtime, store: Store) -> None:
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("one")])), SESSION)
    await agent.run("first")
    await agent.inject("context for the next turn")
    await store.sync(SESSION)
    await ready()


SCENARIOS = {
    "model_stream": during_model_stream,
    "parallel_tool": during_parallel_tool,
    "exclusive_tool": during_exclusive_tool,
    "between_turns": between_turns,
}


async def main(kind: str, location: str, scenario: str) -> None:
    async with Place(kind, location)() as store, Runtime(store) as rt:
        await SCENARIOS[scenario](rt, store)
    raise SystemExit(f"scenario {scenario} ended without stopping")


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
