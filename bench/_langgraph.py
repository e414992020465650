"""The peers benchmark's workload in langgraph (see bench/peers.py)."""

from __future__ import annotations

import asyncio
import uuid

from _measure import cpu, each
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


def _turn(calls: int):
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

    async def turn(history: list[BaseMessage]) -> list[BaseMessage]:
        state = await app.ainvoke({"messages": [*history, HumanMessage("go")]})
        assert state["messages"][-1].content == "done"
        return state["messages"]

    return turn


async def conversation(turns: int, prefill: int, calls: int) -> list[float]:
    """CPU of each of ``turns`` runs, after a history of ``prefill`` turns
    (deep copies of one real turn with fresh message and call ids)."""
    turn = _turn(calls)
    template = await turn([])
    history = [_renamed(message, k) for k in range(prefill) for message in template]
    return await each(turn, history, turns)


def _renamed(message: BaseMessage, k: int) -> BaseMessage:
    update: dict = {"id": str(uuid.uuid4())}
    if isinstance(message, AIMessage) and message.tool_calls:
        update["tool_calls"] = [{**call, "id": f"p{k}_{call['id']}"} for call in message.tool_calls]
    if isinstance(message, ToolMessage):
        update["tool_call_id"] = f"p{k}_{message.tool_call_id}"
    return message.model_copy(update=update, deep=True)


async def crowd(count: int, calls: int) -> float:
    """CPU of ``count`` one-turn conversations run at once with one graph."""
    start = cpu()
    turn = _turn(calls)
    await asyncio.gather(*(turn([]) for _ in range(count)))
    return cpu() - start
