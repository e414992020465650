"""A lead agent delegating to two workers in parallel, offline.

The lead hands a code review to a reviewer and a test run to a tester, both
as sub-agents running at the same time. While they work, the host steers the
reviewer ("focus on error messages") and cancels the tester. The lead gets
the reviewer's findings and the tester's cancellation as tool results, and
answers. Every event of the three agents is printed as one tree.

    python examples/team.py
"""

from __future__ import annotations

import sys

import trio

from agentrio import (
    AgentSpec,
    AssistantMessage,
    Runtime,
    ScriptedModel,
    Text,
    ToolCall,
    Usage,
    agent_tool,
    tool,
)
from agentrio.cli.render import EventPrinter

STEERING = "Focus on the error messages, please."


@tool
async def inspect(path: str) -> str:
    """Read a file of the project under review."""
    await trio.sleep(0.2)
    return f"{path}: 120 lines; raises ValueError('bad') on malformed input"


@tool(execution_mode="exclusive")
async def run_tests(suite: str) -> str:
    """Run a test suite (slow)."""
    await trio.sleep(30)
    return f"{suite}: all passed"


def reply(text: str, *calls: tuple[str, str, dict], tokens=(100, 20)) -> AssistantMessage:
    parts = [Text(text)] + [ToolCall(call_id, name, args) for call_id, name, args in calls]
    return AssistantMessage(parts, usage=Usage(*tokens))


def reviewer_sees_steering(request):
    assert request.messages[-1].text == STEERING
    return reply("The parser's error messages are vague: 'bad' should name the field and the position.")


REVIEWER = AgentSpec(
    "reviewer",
    ScriptedModel(
        [reply("Reading the parser.", ("r1", "inspect", {"path": "parser.py"})), reviewer_sees_steering]
    ),
    tools=[inspect],
)
TESTER = AgentSpec(
    "tester",
    ScriptedModel([reply("Running the full suite.", ("t1", "run_tests", {"suite": "tests/"}))]),
    tools=[run_tests],
)
LEAD = AgentSpec(
    "lead",
    ScriptedModel(
        [
            reply(
                "I'll have the parser reviewed and the tests run at the same time.",
                ("l1", "ask_reviewer", {"task": "Review parser.py."}),
                ("l2", "ask_tester", {"task": "Run the test suite."}),
            ),
            reply("Review done: error messages need the field and position. The test run was cancelled."),
        ]
    ),
    tools=[
        agent_tool(REVIEWER, name="ask_reviewer", description="Ask a reviewer to review code."),
        agent_tool(TESTER, name="ask_tester", description="Ask a tester to run tests."),
    ],
)


async def main(out=sys.stdout) -> str:
    async with Runtime() as rt:
        lead = await rt.create(LEAD)
        printer = EventPrinter(out, show_agents=True, names={lead.id: "lead"})
        async with lead.subscribe() as events, trio.open_nursery() as nursery:
            nursery.start_soon(lead.run, "Check the parser and the tests.")
            async for event in events:
                printer(event)
                if event.type == "child_event" and event.event.type == "tool_execution_start":
                    worker = rt.registry.get(event.child_id)
                    if event.event.tool_name == "inspect":
                        await worker.steer(STEERING)  # the host steers one worker mid-run...
                    elif event.event.tool_name == "run_tests":
                        await worker.cancel()  # ...and cancels the other
                elif event.type == "agent_end":
                    return event.stop_reason
    raise AssertionError("the lead never ended")


if __name__ == "__main__":
    sys.exit(0 if trio.run(main) == "completed" else 1)
