"""The peers benchmark's workload in langgraph (see bench/peers.py)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

NAME = "langgraph"
WORK = (
    "graph.astream({messages: the previous run's messages + prompt}, stream_mode=[messages, updates, "
    "values], version=v2) and one reader taking every chunk: the model's tokens, each node's update, "
    "the state after each step (the last is the run's result, as ainvoke takes it); a StateGraph"
    "(MessagesState): a model node (a BaseChatModel subclass streaming its reply in chunks through "
    "_astream, the calls as tool_call_chunks), a ToolNode running 4 @tool calls; no checkpointer"
)


class ScriptedChatModel(BaseChatModel):
    """A prompt gets ``calls`` tool calls, tool messages get the text answer,
    streamed one chunk per call (or one for the text)."""

    calls: int = 4
    turns: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self

    def _chunks(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        if self.calls and isinstance(messages[-1], HumanMessage):
            self.turns += 1
            for i in range(self.calls):
                call = {
                    "name": "noop",
                    "args": f'{{"i": {i}}}',
                    "id": f"c{self.turns}_{i}",
                    "index": i,
                    "type": "tool_call_chunk",
                }
                yield ChatGenerationChunk(message=AIMessageChunk("", tool_call_chunks=[call]))
        else:
            yield ChatGenerationChunk(message=AIMessageChunk("done"))

    def _stream(self, messages, stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages):
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self, messages, stop=None, run_manager=None, **kwargs
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages):
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop, run_manager))


@tool
async def noop(i: int) -> str:
    """Does nothing."""
    return "ok"


def turn(calls: int) -> Callable[[list[BaseMessage]], Awaitable[list[BaseMessage]]]:
    """One run of a conversation: the history before it -> the history after it."""
    model = ScriptedChatModel(calls=calls).bind_tools([noop])

    async def call_model(state: MessagesState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([noop]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    app = graph.compile()

    async def run(history: list[BaseMessage]) -> list[BaseMessage]:
        state = None
        async for chunk in app.astream(
            {"messages": [*history, HumanMessage("go")]},
            stream_mode=["messages", "updates", "values"],
            version="v2",
        ):
            if chunk["type"] == "values":
                state = chunk["data"]
        assert state["messages"][-1].content == "done"
        return state["messages"]

    return run


def copied(message: BaseMessage, k: int) -> BaseMessage:
    """A deep copy of ``message`` as turn ``k`` would have it (its own ids)."""
    update: dict = {"id": str(uuid.uuid4())}
    if isinstance(message, AIMessage) and message.tool_calls:
        update["tool_calls"] = [{**call, "id": f"p{k}_{call['id']}"} for call in message.tool_calls]
    if isinstance(message, ToolMessage):
        update["tool_call_id"] = f"p{k}_{message.tool_call_id}"
    return message.model_copy(update=update, deep=True)
