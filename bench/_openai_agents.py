"""The peers benchmark's workload in openai-agents (see bench/peers.py)."""

from __future__ import annotations

import asyncio
import copy
import itertools

from _measure import cpu, each
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
                ResponseFunctionToolCall(type="function_call", call_id=f"c{turn}_{i}", name="noop", arguments=f'{{"i": {i}}}')
                for i in range(self.calls)
            ]
        else:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            output = [ResponseOutputMessage(id=f"m{next(self.ids)}", type="message", role="assistant", status="completed", content=[text])]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the benchmark runs Runner.run")


@function_tool
async def noop(i: int) -> str:
    """Does nothing."""
    return "ok"


def _turn(calls: int):
    agent = Agent(name="bench", model=ScriptedModel(calls), tools=[noop])
    config = RunConfig(tracing_disabled=True)

    async def turn(history: list) -> list:
        result = await Runner.run(agent, [*history, {"role": "user", "content": "go"}], run_config=config)
        assert result.final_output == "done"
        return result.to_input_list()

    return turn


async def conversation(turns: int, prefill: int, calls: int) -> list[float]:
    """CPU of each of ``turns`` runs, after a history of ``prefill`` turns
    (deep copies of one real turn with fresh call ids)."""
    turn = _turn(calls)
    template = await turn([])
    history = [_renamed(copy.deepcopy(item), k) for k in range(prefill) for item in template]
    return await each(turn, history, turns)


def _renamed(item: dict, k: int) -> dict:
    for key in ("call_id", "id"):
        if key in item:
            item[key] = f"p{k}_{item[key]}"
    return item


async def crowd(count: int, calls: int) -> float:
    """CPU of ``count`` one-turn conversations run at once with one Agent."""
    start = cpu()
    turn = _turn(calls)
    await asyncio.gather(*(turn([]) for _ in range(count)))
    return cpu() - start
