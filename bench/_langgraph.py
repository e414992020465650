"""The peers benchmark's workload in langgraph (see bench/peers.py)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

NAME = "langgraph"
WORK = (
    "graph.ainvoke({messages: the previous run's messages + prompt}) on a StateGraph(MessagesState): "
    "a model node (a BaseChatModel subclass, not streamed), a ToolNode running 4 @tool calls; no checkpointer"
)


class ScriptedChatModel(BaseChatModel):
    """A prompt gets ``calls`` tool calls, tool messages get the text answer."""

    calls: int = 4
    turns: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        if self.calls and isinstance(messages[-1], HumanMessage):
            self.turns += 1
            calls = [
                {"name": "noop", "args": {"i": i}, "id": f"c{self.turns}_{i}", "type": "tool_call"}
                for i in range(self.calls)
            ]
            message = AIMessage("", tool_calls=calls)
        else:
            message = AIMessage("done")
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return self._generate(messages, stop)


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
        state = await app.ainvoke({"messages": [*history, HumanMessage("go")]})
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
