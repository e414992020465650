"""The peers benchmark's workload in openai-agents (see bench/peers.py)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from agents import Agent, Model, RunConfig, Runner, function_tool
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)

NAME = "openai-agents"
WORK = (
    "Runner.run_streamed(agent, the previous run's to_input_list() + prompt) and one reader "
    "taking every event of result.stream_events(); a Model subclass whose stream_response yields "
    "the Responses API stream events (created, in_progress, per output item added, argument or "
    "text delta and done, item done, completed); 4 calls of a @function_tool; tracing disabled"
)


class ScriptedModel(Model):
    """A prompt gets ``calls`` tool calls, tool outputs get the text answer,
    streamed as the Responses API streams them."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.ids = itertools.count()

    async def get_response(self, *args, **kwargs):
        raise NotImplementedError("the benchmark runs Runner.run_streamed")

    async def stream_response(self, system_instructions, input, *args, **kwargs) -> AsyncIterator:
        n = next(self.ids)
        if self.calls and input[-1].get("role") == "user":
            output = [
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc{n}_{i}",
                    call_id=f"c{n}_{i}",
                    name="noop",
                    arguments=f'{{"i": {i}}}',
                    status="completed",
                )
                for i in range(self.calls)
            ]
        else:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            output = [
                ResponseOutputMessage(
                    id=f"m{n}", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        for event in _events(f"r{n}", output):
            yield event


def _events(response_id: str, output: list) -> list:
    """The stream of a response with ``output``, event by event."""
    seq = itertools.count()
    started = _response(response_id, [], "in_progress")
    events: list = [
        ResponseCreatedEvent(type="response.created", response=started, sequence_number=next(seq)),
        ResponseInProgressEvent(type="response.in_progress", response=started, sequence_number=next(seq)),
    ]
    for index, item in enumerate(output):
        if isinstance(item, ResponseFunctionToolCall):
            events += [
                ResponseOutputItemAddedEvent(
                    type="response.output_item.added",
                    item=item.model_copy(update={"arguments": "", "status": "in_progress"}),
                    output_index=index,
                    sequence_number=next(seq),
                ),
                ResponseFunctionCallArgumentsDeltaEvent(
                    type="response.function_call_arguments.delta",
                    item_id=item.id,
                    output_index=index,
                    delta=item.arguments,
                    sequence_number=next(seq),
                ),
                ResponseFunctionCallArgumentsDoneEvent.model_validate(
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": item.id,
                        "output_index": index,
                        "arguments": item.arguments,
                        "name": item.name,
                        "sequence_number": next(seq),
                    }
                ),
            ]
        else:
            part = item.content[0]
            events += [
                ResponseOutputItemAddedEvent(
                    type="response.output_item.added",
                    item=item.model_copy(update={"content": [], "status": "in_progress"}),
                    output_index=index,
                    sequence_number=next(seq),
                ),
                _of_part(
                    ResponseContentPartAddedEvent,
                    "response.content_part.added",
                    item,
                    index,
                    seq,
                    part=part.model_copy(update={"text": ""}),
                ),
                _of_part(
                    ResponseTextDeltaEvent,
                    "response.output_text.delta",
                    item,
                    index,
                    seq,
                    delta=part.text,
                    logprobs=[],
                ),
                _of_part(
                    ResponseTextDoneEvent,
                    "response.output_text.done",
                    item,
                    index,
                    seq,
                    text=part.text,
                    logprobs=[],
                ),
                _of_part(
                    ResponseContentPartDoneEvent, "response.content_part.done", item, index, seq, part=part
                ),
            ]
        events.append(
            ResponseOutputItemDoneEvent(
                type="response.output_item.done", item=item, output_index=index, sequence_number=next(seq)
            )
        )
    events.append(
        ResponseCompletedEvent(
            type="response.completed",
            response=_response(response_id, output, "completed"),
            sequence_number=next(seq),
        )
    )
    return events


def _of_part(event_type: type, kind: str, item: Any, index: int, seq: Iterator[int], **fields: Any) -> Any:
    """An event about the first content part of message ``item``, the
    ``index``-th output, numbered next in ``seq``."""
    return event_type(
        type=kind, item_id=item.id, output_index=index, content_index=0, sequence_number=next(seq), **fields
    )


def _response(response_id: str, output: list, status: str) -> Response:
    return Response(
        id=response_id,
        created_at=0,
        model="scripted",
        object="response",
        output=output,
        tool_choice="auto",
        tools=[],
        top_p=None,
        parallel_tool_calls=True,
        status=status,
    )


@function_tool
async def noop(i: int) -> str:
    """Does nothing."""
    return "ok"


def turn(calls: int) -> Callable[[list], Awaitable[list]]:
    """One run of a conversation: the history before it -> the history after it."""
    agent = Agent(name="bench", model=ScriptedModel(calls), tools=[noop])
    config = RunConfig(tracing_disabled=True)

    async def run(history: list) -> list:
        result = Runner.run_streamed(agent, [*history, {"role": "user", "content": "go"}], run_config=config)
        async for _ in result.stream_events():
            pass
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
