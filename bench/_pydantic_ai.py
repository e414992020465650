"""The peers benchmark's workload in pydantic-ai (see bench/peers.py)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Awaitable, Callable

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

NAME = "pydantic-ai"
WORK = (
    "Agent.run(prompt, message_history=the previous run's all_messages()) and one reader taking "
    "every event, an event_stream_handler; a FunctionModel stream function yielding one "
    "DeltaToolCall per call (or the text); 4 calls of an @agent.tool_plain"
)


def turn(calls: int) -> Callable[[list[ModelMessage]], Awaitable[list[ModelMessage]]]:
    """One run of a conversation: the history before it -> the history after it."""
    agent = _agent(calls)

    async def run(history: list[ModelMessage]) -> list[ModelMessage]:
        result = await agent.run("go", message_history=history, event_stream_handler=_drain)
        assert result.output == "done"
        return result.all_messages()

    return run


def copied(message: ModelMessage, k: int) -> ModelMessage:
    """A deep copy of ``message`` as turn ``k`` would have it (its own call ids)."""
    message = copy.deepcopy(message)
    for part in message.parts:
        if hasattr(part, "tool_call_id"):
            part.tool_call_id = f"p{k}_{part.tool_call_id}"
    return message


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
