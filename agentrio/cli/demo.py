"""``agentrio demo``: a real agent session, offline.

A scripted model plays a small coding task against the real built-in tools
in a temporary workspace: a turn with parallel reads, an exclusive edit, a
steering message arriving mid-run and a test run in a supervised
subprocess, then a follow-up turn. Every event is printed as it happens.
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

import trio

from ..actors import AgentSpec
from ..events import AgentEnd, MessageEnd, ToolExecutionStart
from ..messages import AssistantMessage, Part, Text, ToolCall, Usage, UserMessage
from ..models import ModelRequest, ScriptedModel
from ..supervisors import Runtime
from ..tools.builtin import coding_tools
from . import CommandParsers
from .options import help_text
from .render import EventPrinter

#: Seconds a scripted reply "thinks" before it streams, so the timing of a
#: real session shows.
THINKING = 0.25

FILES = {
    "calc.py": '''def add(a, b):
    """Return the sum of a and b."""
    return a - b
''',
    "test_calc.py": """from calc import add

assert add(2, 3) == 5, f"add(2, 3) returned {add(2, 3)}"
print("all tests passed")
""",
    "README.md": "# calc\n\nA tiny calculator.\n",
}

STEERING = "Keep the fix minimal, and run the tests once it is in."
FOLLOW_UP = "Now add a mul(a, b) function, with a test."


def _python() -> str:
    return "python3" if shutil.which("python3") else shlex.quote(sys.executable)


_call_ids = itertools.count(1)


#: One reply of the script: the model's message, after its "thinking".
_Reply = Callable[[ModelRequest], Awaitable[AssistantMessage]]


def _reply(text: str, *calls: tuple[str, dict[str, Any]], tokens: tuple[int, int]) -> AssistantMessage:
    parts: list[Part] = [Text(text)]
    parts += [ToolCall(f"call_{next(_call_ids)}", name, args) for name, args in calls]
    return AssistantMessage(parts, usage=Usage(*tokens))


def _after_thinking(
    message: AssistantMessage, check: Callable[[ModelRequest], None] | None, seconds: float
) -> _Reply:
    async def reply(request: ModelRequest) -> AssistantMessage:
        if check is not None:
            check(request)
        await trio.sleep(seconds)
        return message

    return reply


def _sees_steering(request: ModelRequest) -> None:
    # The steering message joined this turn, right after the edit's result.
    assert request.messages[-1].text == STEERING, "steering did not reach the next request"


def script(thinking: float = THINKING) -> list[_Reply]:
    """The model's side of the session, one reply per request; each reply
    "thinks" for ``thinking`` seconds first."""
    run_tests = {"command": f"{_python()} test_calc.py"}
    add_mul = (
        '    return a + b\n\n\ndef mul(a, b):\n    """Return the product of a and b."""\n    return a * b\n'
    )
    replies = [
        (
            _reply(
                "I'll read the module and its test, and look for other callers of add.",
                ("read", {"path": "calc.py"}),
                ("read", {"path": "test_calc.py"}),
                ("grep", {"pattern": r"add\("}),
                tokens=(412, 58),
            ),
            None,
        ),
        (
            _reply(
                "Found it: add subtracts. Fixing the operator.",
                ("edit", {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
                tokens=(903, 64),
            ),
            None,
        ),
        (_reply("Understood. Running the test now.", ("bash", run_tests), tokens=(1021, 31)), _sees_steering),
        (_reply("Fixed: add now returns a + b, and the test passes.", tokens=(1102, 19)), None),
        (
            _reply(
                "Adding mul and its test.",
                ("edit", {"path": "calc.py", "old_string": "    return a + b\n", "new_string": add_mul}),
                (
                    "edit",
                    {
                        "path": "test_calc.py",
                        "old_string": "from calc import add\n",
                        "new_string": "from calc import add, mul\n\nassert mul(4, 5) == 20\n",
                    },
                ),
                tokens=(1190, 120),
            ),
            None,
        ),
        (_reply("Checking that everything passes.", ("bash", run_tests), tokens=(1350, 25)), None),
        (_reply("Done: mul is in calc.py and tested; all tests pass.", tokens=(1401, 17)), None),
    ]
    return [_after_thinking(message, check, thinking) for message, check in replies]


async def run_demo(workspace: Path, out: TextIO = sys.stdout, *, thinking: float = THINKING) -> str:
    """Play the session in ``workspace``; returns the run's stop reason."""
    for name, text in FILES.items():
        (workspace / name).write_text(text)
    printer = EventPrinter(out)
    spec = AgentSpec(
        "coder",
        ScriptedModel(script(thinking)),
        system_prompt="You are a careful coding agent.",
        tools=coding_tools(workspace),
    )
    async with Runtime() as rt:
        agent = await rt.create(spec)
        async with agent.subscribe() as events, trio.open_nursery() as nursery:
            nursery.start_soon(agent.run, "The test in test_calc.py fails. Please fix calc.py.")
            async for event in events:
                printer(event)
                match event:
                    case MessageEnd(message=UserMessage() as message) if message.text.startswith("The test"):
                        # The user thinks of the next task while the agent works.
                        await agent.followup(FOLLOW_UP)
                    case ToolExecutionStart(tool_name="edit") if printer.tool_calls < 4:
                        await agent.steer(STEERING)
                    case AgentEnd():
                        return event.stop_reason
                    case _:
                        # Only the script's two interruptions and the run's end
                        # act here; the printer has drawn every event already.
                        pass
    raise AssertionError("the run ended without agent_end")


def _run(args: argparse.Namespace) -> int:
    style = EventPrinter(sys.stdout).style
    with tempfile.TemporaryDirectory(prefix="agentrio-demo-") as tmp:
        workspace = Path(tmp)
        print(style.bold("agentrio demo") + " — a scripted model fixes a bug with real tools")
        print(style.dim(f"workspace: {workspace}  (files: {', '.join(FILES)})\n"))
        stop = trio.run(run_demo, workspace)
        print(style.dim("\nfinal calc.py:"))
        print((workspace / "calc.py").read_text().rstrip())
    return 0 if stop == "completed" else 1


def register(subparsers: CommandParsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        description=help_text(__doc__) + "\nIt needs no API key and changes nothing outside its workspace.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=_run)
