"""The peers benchmark's workload in openai-agents (see bench/peers.py)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Awaitable, Callable

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

NAME = "openai-agents"
WORK = (
    "Runner.run(agent, the previous run's to_input_list() + prompt); a Model subclass answering "
    "get_response (not streamed); 4 calls of a @function_tool; tracing disabled"
)


class ScriptedModel(Model):
    """A prompt gets ``calls`` tool calls, tool outputs get the text answer."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.ids = itertools.count()

    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        if self.calls and input[-1].get("role") == "user":
            turn = next(self.ids)
            output = [
                ResponseFunctionToolCall(
                    type="function_call", call_id=f"c{turn}_{i}", name="noop", arguments=f'{{"i": {i}}}'
                )
                for i in range(self.calls)
            ]
        else:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            output = [
                ResponseOutputMessage(
                    id=f"m{next(self.ids)}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[text],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the benchmark runs Runner.run")


@function_tool
async def noop(i: int) -> str:
    """Does nothing."""
    return "ok"


def turn(calls: int) -> Callable[[list], Awaitable[list]]:
    """One run of a conversation: the history before it -> the history after it."""
    agent = Agent(name="bench", model=ScriptedModel(calls), tools=[noop])
    config = RunConfig(tracing_disabled=True)

    async def run(history: list) -> list:
        result = await Runner.run(agent, [*history, {"role": "user", "content": "go"}], run_config=config)
        assert result.final_output == "done"
        return result.to_input_list()

    return run


def copied(item: dict, k: int) -> dict:
    """A deep copy of ``item`` as turn ``k`` would have it (its own ids)."""
    item = copy.deepcopy(item)
    for key in ("call_id", "id"):
        if key in item:
            item[key] = f"p{k}_{item[key]}"
    return item
