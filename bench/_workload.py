"""The benchmarks' workload in agentrio, through its public API only.

One turn is one ``agent.run``: a prompt, one model reply asking for
``calls`` parallel calls of a no-op tool, the tool results, and a text
answer. The model is a ``ScriptedModel`` whose reply is one callable, so a
conversation can have any number of turns. It runs with ``strict=False``:
strict mode checks the whole history on every request, which is the
model's cost, not the runtime's; and with ``yield_every=0``: each reply
reaches the agent in one burst, as a reply read from the network in one
piece would (the peers' scripted models hand theirs over without yielding
to the event loop either). ``ScriptedModel`` records every request;
a conversation clears that record after each run, outside the timing, so
that holding every past request is not what is measured.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trio.lowlevel
from _measure import allocated, cpu

from agentrio import (
    Agent,
    AgentSpec,
    AssistantMessage,
    Runtime,
    ScriptedModel,
    Text,
    Tool,
    ToolCall,
    UserMessage,
)

CALLS = 4


async def _noop(args: dict, ctx: object) -> str:
    return "ok"


NOOP = Tool("noop", "Does nothing.", {"type": "object", "properties": {"i": {"type": "integer"}}}, _noop)


def scripted(turns: int, calls: int = CALLS, yield_every: int = 0) -> ScriptedModel:
    """A model for ``turns`` turns: a prompt gets ``calls`` tool calls (or,
    with none, the answer), tool results get the text answer."""
    ids = itertools.count()

    def reply(request) -> AssistantMessage:
        if calls and isinstance(request.messages[-1], UserMessage):
            turn = next(ids)
            return AssistantMessage([ToolCall(f"c{turn}_{i}", "noop", {"i": i}) for i in range(calls)])
        return AssistantMessage([Text("done")])

    return ScriptedModel(itertools.repeat(reply, 2 * turns), strict=False, yield_every=yield_every)


def spec(model: ScriptedModel) -> AgentSpec:
    return AgentSpec("bench", model, tools=[NOOP])


async def drain(agent: Agent) -> None:
    """Read every event of ``agent`` until it is disposed, as a UI would."""
    async with agent.subscribe() as events:
        async for _ in events:
            pass


async def conversation(
    turns: int, calls: int = CALLS, subscribed: bool = False, yield_every: int = 0
) -> list[float]:
    """Hold a conversation of ``turns`` runs with one agent; return the CPU
    time of each run."""
    model = scripted(turns, calls, yield_every)
    times = []
    async with trio.open_nursery() as nursery, Runtime() as rt:
        agent = await rt.create(spec(model))
        if subscribed:
            nursery.start_soon(drain, agent)
        for _ in range(turns):
            start = cpu()
            result = await agent.run("go")
            times.append(cpu() - start)
            model.requests.clear()
            assert result.stop_reason == "completed", result.stop_reason
    return times


async def crowd(count: int, subscribed: bool = False) -> float:
    """Create ``count`` agents in one Runtime and run one turn of each, all
    at once; return the CPU time from entering the Runtime to leaving it.
    Each agent has its own spec, model, session (journaled in the
    in-memory store) and, with ``subscribed``, a reader of every event;
    leaving the Runtime disposes of them all. Only the Tool is shared."""
    start = cpu()
    async with trio.open_nursery() as nursery, Runtime() as rt:
        agents = [await rt.create(spec(scripted(1))) for _ in range(count)]
        if subscribed:
            for agent in agents:
                nursery.start_soon(drain, agent)
        async with trio.open_nursery() as runs:
            for agent in agents:
                runs.start_soon(_one_turn, agent)
    return cpu() - start


async def crowd_memory(count: int) -> dict[str, float]:
    """Peak Python memory of ``crowd(count)``."""
    with allocated() as held:
        await crowd(count)
        _, peak = held()
    return {"peak": peak}


async def _one_turn(agent: Agent) -> None:
    result = await agent.run("go")
    assert result.stop_reason == "completed", result.stop_reason


async def idle(count: int) -> dict[str, float]:
    """Create ``count`` idle agents: CPU per creation, and to leave the
    Runtime. (With the Runtime's default ``hibernate_after``, an agent is
    created hibernating: it gets its task when first used.)"""
    model = ScriptedModel([])
    async with Runtime() as rt:
        await rt.create(spec(model))  # imports and caches warm
        start = cpu()
        for _ in range(count):
            await rt.create(spec(model))
        created = cpu()
    left = cpu()
    return {"create": (created - start) / count, "exit": left - created}


async def idle_memory(count: int, hibernate_after: float | None = 1.0) -> dict[str, float]:
    """Python memory held per idle agent, traced over ``count`` agents (with
    ``hibernate_after=None`` they never hibernate: each keeps its task)."""
    model = ScriptedModel([])
    async with Runtime(hibernate_after=hibernate_after) as rt:
        await rt.create(spec(model))
        with allocated() as held:
            for _ in range(count):
                await rt.create(spec(model))
            kept, _ = held()
    return {"memory": kept / count}


async def wakes(count: int) -> dict[str, float]:
    """What hibernation costs, per agent over ``count`` agents, in one run:

    * ``create``: creating an agent, which hibernates from the start;
    * ``wake``: waking it: the cheapest call that needs its actor
      (withdrawing an input it does not hold) on a hibernating agent, its
      actor started for it, and the agent hibernating again at once
      (``hibernate_after=0``), until every agent sleeps again;
    * ``call``: the same call to an agent that is awake (it never hibernates);
    * ``turn``: one turn (``agent.run``, the workload above) of an agent
      that is awake.
    """
    model = ScriptedModel([])
    async with Runtime(hibernate_after=0) as rt:
        await rt.create(spec(model))  # imports and caches warm
        start = cpu()
        agents = [await rt.create(spec(model)) for _ in range(count)]
        created = cpu()
        for agent in agents:
            await agent.withdraw("in_none")
        while not all(agent.hibernating for agent in agents):
            await trio.lowlevel.checkpoint()
        woken = cpu()
    async with Runtime(hibernate_after=None) as rt:
        awake = [await rt.create(spec(scripted(1))) for _ in range(count)]
        called = cpu()
        for agent in awake:
            await agent.withdraw("in_none")
        ran = cpu()
        for agent in awake:
            await _one_turn(agent)
        turned = cpu()
    return {
        "create": (created - start) / count,
        "wake": (woken - created) / count,
        "call": (ran - called) / count,
        "turn": (turned - ran) / count,
    }
