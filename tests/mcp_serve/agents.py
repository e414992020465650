"""Agents for the MCP server's tests (``--spec tests.mcp_serve.agents:AGENTS``),
on a scripted model that answers from the conversation:

- ``"tool NAME JSON"`` calls the tool ``NAME`` with those arguments;
- after a tool result, it says ``"tool said: RESULT"``;
- anything else it says back with how many prompts the session has seen
  (``"hello #1"``), which shows a continued session keeps its history.

``nap`` sleeps; a nap that is cancelled is appended to the file named by
``$NAP_LOG`` (when set). ``note`` has side effects, so the policy asks.
"""

import json
import os

import attrs
import trio

from agentrio import AgentSpec, ScriptedModel, Text, ToolCall, tool
from agentrio.messages import AssistantMessage
from agentrio.tools.permissions import allow, ask, rules


def reply(request):
    last = request.messages[-1]
    if last.role == "tool_result":
        return AssistantMessage([Text(f"tool said: {last.text}")])
    text = last.text
    if text.startswith("tool "):
        _, name, arguments = text.split(" ", 2)
        prompts = sum(m.role == "user" for m in request.messages)
        return AssistantMessage([ToolCall(f"call_{prompts}", name, json.loads(arguments))])
    prompts = sum(m.role == "user" for m in request.messages)
    return AssistantMessage([Text(f"{text} #{prompts}")])


@tool
async def nap(seconds: float) -> str:
    """Sleep for ``seconds``."""
    try:
        await trio.sleep(seconds)
    except trio.Cancelled:
        if log := os.environ.get("NAP_LOG"):
            with open(log, "a") as file:
                file.write("nap cancelled\n")
        raise
    return "rested"


@tool(execution_mode="exclusive")
async def note(text: str) -> str:
    """Write ``text`` down."""
    return f"noted {text}"


@attrs.frozen
class Weather:
    city: str
    degrees: int


parrot = AgentSpec(
    "parrot",
    ScriptedModel([reply] * 1000),
    tools=[nap, note],
    permission=rules(allow("nap"), ask("note")),
)
forecaster = AgentSpec(
    "forecaster",
    ScriptedModel([AssistantMessage([Text('{"city": "Paris", "degrees": 21}')])] * 100),
    output_type=Weather,
)
AGENTS = [parrot, forecaster]
