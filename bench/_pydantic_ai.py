"""The peers benchmark's workload in pydantic-ai (see bench/peers.py)."""

from __future__ import annotations

import asyncio
import copy
import itertools

from _measure import cpu, each
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

NAME = "pydantic-ai"
WORK = (
    "Agent.run(prompt, message_history=the previous run's all_messages()); a FunctionModel stream "
    "function; 4 calls of an @agent.tool_plain; an event_stream_handler reading every event"
)


def _agent(calls: int) -> Agent:
    ids = itertools.count()

    async def stream(messages: list[ModelMessage], info: AgentInfo):
        if calls and any(isinstance(part, UserPromptPart) for part in messages[-1].parts):
            turn = next(ids)
            for i in range(calls):
                yield {i: DeltaToolCall(name="noop", json_args=f'{{"i": {i}}}', tool_call_id=f"c{turn}_{i}")}
        else:
            yield "done"

    agent = Agent(FunctionModel(stream_function=stream))

    @agent.tool_plain
    async def noop(i: int) -> str:
        """Does nothing."""
        return "ok"

    return agent


async def _drain(ctx, events) -> None:
    async for _ in events:
        pass


def _turn(agent: Agent):
    async def turn(history: list[ModelMessage]) -> list[ModelMessage]:
        result = await agent.run("go", message_history=history, event_stream_handler=_drain)
        assert result.output == "done"
        return result.all_messages()

    return turn


async def conversation(turns: int, prefill: int, calls: int) -> list[float]:
    """CPU of each of ``turns`` runs, after a history of ``prefill`` turns
    (deep copies of one real turn with fresh call ids)."""
    turn = _turn(_agent(calls))
    template = await turn([])
    history = [_renamed(copy.deepcopy(message), k) for k in range(prefill) for message in template]
    return await each(turn, history, turns)


def _renamed(message: ModelMessage, k: int) -> ModelMessage:
    for part in message.parts:
        if hasattr(part, "tool_call_id"):
            part.tool_call_id = f"p{k}_{part.tool_call_id}"
    return message


async def crowd(count: int, calls: int) -> float:
    """CPU of ``count`` one-turn conversations run at once with one Agent."""
    start = cpu()
    turn = _turn(_agent(calls))
    await asyncio.gather(*(turn([]) for _ in range(count)))
    return cpu() - start
