"""Runtime overhead of the agent loop, against a bare loop and a peer framework.

    pip install -e '.[bench]' && python bench/loop_overhead.py [--turns 5000]

One run of ``--turns`` model requests, each asking for 4 parallel calls of a
no-op tool, every reply streamed in chunks as ScriptedModel streams it (but
without recording requests: holding 5,000 snapshots of a growing history
would measure the garbage collector). Three figures:

* agentrio: the whole run through ``agent.run``;
* bare loop: the 15-line ``while`` loop a framework replaces (stream, run the
  calls in a nursery, append the results), same model, same tools;
* model only: draining ScriptedModel's streams alone, which both include.

Overhead = (time - model only) / turns, and per tool call / 4 calls; also
with one subscriber draining every event. Then, at ``--peer-turns``, the
same session in pydantic-ai (its streaming FunctionModel, the same no-op
tool), as total time per turn: its cost grows with the history, so it is
compared where it still finishes. Last, the memory of an idle agent, with
tracemalloc over 1,000 agents.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrio import AgentSpec, AssistantMessage, Runtime, ScriptedModel, Text, Tool, ToolCall, ToolResultMessage, UserMessage  # noqa: E402
from agentrio.models import MessageAssembler, ModelRequest, message_events  # noqa: E402

CALLS_PER_TURN = 4


async def noop(args, ctx):
    return "ok"


NOOP = Tool("noop", "Does nothing.", {"type": "object"}, noop)


class ReplayModel:
    """Streams a script like ScriptedModel, remembering nothing."""

    def __init__(self, turns: int) -> None:
        script = [
            AssistantMessage([ToolCall(f"c{t}_{i}", "noop", {"i": i}) for i in range(CALLS_PER_TURN)])
            for t in range(turns - 1)
        ]
        self.replies = iter(script + [AssistantMessage([Text("done")])])
        self.requests = 0

    async def stream(self, request):
        self.requests += 1
        for event in message_events(next(self.replies)):
            await trio.lowlevel.checkpoint()
            yield event


async def with_agentrio(turns: int, subscribed: bool = False) -> float:
    model = ReplayModel(turns)
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("bench", model, tools=[NOOP]))
        async with trio.open_nursery() as nursery:
            if subscribed:
                nursery.start_soon(_drain, agent)
                await trio.sleep(0)
            start = time.perf_counter()
            result = await agent.run("go")
            elapsed = time.perf_counter() - start
            nursery.cancel_scope.cancel()
    assert result.stop_reason == "completed" and model.requests == turns
    return elapsed


async def _drain(agent) -> None:
    async with agent.subscribe() as events:
        async for _ in events:
            pass


async def with_agentrio_subscribed(turns: int) -> float:
    return await with_agentrio(turns, subscribed=True)


def with_pydantic_ai(turns: int) -> float | None:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.models.function import DeltaToolCall, FunctionModel
        from pydantic_ai.usage import UsageLimits
    except ImportError:
        return None
    import asyncio

    requests = 0

    async def stream(messages, info):
        nonlocal requests
        requests += 1
        if requests < turns:
            for i in range(CALLS_PER_TURN):
                yield {i: DeltaToolCall(name="noop", json_args=f'{{"i": {i}}}', tool_call_id=f"c{requests}_{i}")}
        else:
            yield "done"

    agent = Agent(FunctionModel(stream_function=stream))

    @agent.tool_plain
    async def noop(i: int) -> str:
        return "ok"

    async def consume(ctx, events):
        async for _ in events:
            pass

    async def run() -> float:
        start = time.perf_counter()
        await agent.run("go", usage_limits=UsageLimits(request_limit=None), event_stream_handler=consume)
        return time.perf_counter() - start

    elapsed = asyncio.run(run())
    assert requests == turns
    return elapsed


async def bare_loop(turns: int) -> float:
    model = ReplayModel(turns)
    tools = {"noop": NOOP}
    messages = [UserMessage("go")]
    start = time.perf_counter()
    while True:
        assembler = MessageAssembler()
        async for event in model.stream(ModelRequest("", list(messages), [NOOP.spec])):
            assembler.feed(event)
        message = assembler.message()
        messages.append(message)
        if not message.tool_calls:
            break
        results: dict[str, str] = {}

        async def run(call):
            results[call.id] = await tools[call.name].execute(call.arguments, None)

        async with trio.open_nursery() as nursery:
            for call in message.tool_calls:
                nursery.start_soon(run, call)
        messages += [ToolResultMessage(c.id, c.name, [Text(results[c.id])]) for c in message.tool_calls]
    return time.perf_counter() - start


async def model_only(turns: int) -> float:
    model = ReplayModel(turns)
    request = ModelRequest("", [UserMessage("go")])
    start = time.perf_counter()
    for _ in range(turns):
        async for _event in model.stream(request):
            pass
    return time.perf_counter() - start


async def idle_agent_bytes(count: int) -> float:
    async with Runtime() as rt:
        spec = AgentSpec("idle", ScriptedModel([]), tools=[NOOP])
        await rt.create(spec)  # warm up imports and caches
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(count):
            await rt.create(spec)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    return (after - before) / count


def best(fn, turns: int, rounds: int) -> float:
    return min(trio.run(fn, turns) for _ in range(rounds))


def peers(turns: int, rounds: int) -> None:
    ours = best(with_agentrio_subscribed, turns, rounds)
    bare = best(bare_loop, turns, rounds)
    print(f"\n{turns:,} turns, total per turn (agentrio with a subscriber, as a UI would run it)")
    print(f"  agentrio              : {ours / turns * 1e6:9.1f} us/turn")
    print(f"  bare while-loop       : {bare / turns * 1e6:9.1f} us/turn")
    theirs = with_pydantic_ai(turns)
    if theirs is None:
        print("  pydantic-ai           : not installed (pip install -e '.[bench]')")
        return
    print(f"  pydantic-ai           : {theirs / turns * 1e6:9.1f} us/turn   agentrio is {theirs / ours:.1f}x faster")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--peer-turns", type=int, default=200)
    args = parser.parse_args()
    turns, calls = args.turns, args.turns * CALLS_PER_TURN

    model = best(model_only, turns, args.rounds)
    ours = best(with_agentrio, turns, args.rounds)
    subscribed = best(with_agentrio_subscribed, turns, args.rounds)
    bare = best(bare_loop, turns, args.rounds)

    def per(total: float) -> tuple[float, float]:
        overhead = max(total - model, 0.0)
        return overhead / turns * 1e6, overhead / calls * 1e6

    ours_turn, ours_call = per(ours)
    sub_turn, sub_call = per(subscribed)
    bare_turn, bare_call = per(bare)
    print(f"{turns:,} turns x {CALLS_PER_TURN} parallel no-op calls (best of {args.rounds})")
    print(f"  model streaming alone : {model:7.3f} s")
    print(f"  agentrio              : {ours:7.3f} s   {ours_turn:7.1f} us/turn   {ours_call:6.1f} us/tool call")
    print(f"  agentrio, subscribed  : {subscribed:7.3f} s   {sub_turn:7.1f} us/turn   {sub_call:6.1f} us/tool call")
    print(f"  bare while-loop       : {bare:7.3f} s   {bare_turn:7.1f} us/turn   {bare_call:6.1f} us/tool call")
    print(f"  agentrio / bare       : {ours_turn / bare_turn:7.2f}x overhead")
    peers(args.peer_turns, args.rounds)
    per_agent = trio.run(idle_agent_bytes, args.agents)
    print(f"idle agent memory ({args.agents:,} agents): {per_agent / 1024:.1f} KB each")


if __name__ == "__main__":
    main()
