"""``agentrio run PROMPT``: one run of a coding agent, streamed to the terminal.

With --output-schema FILE the answer must be JSON that fits the JSON Schema
in FILE (asked for in the provider's own way; an answer that does not fit
goes back to the model with what was wrong, twice at most). The validated
JSON is printed on stdout as one line, and the transcript goes to stderr;
with --json the events stay as they are and one last line follows them,
{"type": "output", "output": ...}.

Exit codes: 0 the run completed; 1 it ended with an error (or could not
start: a missing API key, an unreadable store); 2 a usage error (an
empty prompt, --resume of a session not in the store); 3 it hit a
limit (max turns, tool calls, time, tokens, cost); 4 a person stopped it at an
approval; 5 its answer never fit --output-schema (why is on stderr); 6 the
--output-schema FILE cannot be used (missing, not JSON, not a valid JSON
Schema, or refused by the provider); 7 the session is open in another
process (an agentrio run, chat or serve that has not ended); 130 it was
cancelled (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import trio
from rich.console import Console
from rich.text import Text

from ..actors import Agent, AgentSpec, RunResult
from ..events import AgentEnd, ApprovalRequest, Event
from ..messages import converter
from ..models import OutputSpec
from . import CommandParsers
from .advice import advice
from .errors import USAGE, CommandError
from .live_view import LiveView, approval_question, exit_status, terminal_console
from .options import Settings, add_agent_options, help_text
from .output_schema import add_output_schema_option, read_output_schema
from .session import (
    APPROVAL_KEYS,
    DETAILS,
    TerminalPolicy,
    answer_approval,
    approval_choices,
    build_spec,
    open_agent,
    open_runtime,
    sandbox_said,
)
from .terminal import CTRL_C, cbreak, keys, open_terminal, stdin_is_terminal


def register(subparsers: CommandParsers) -> None:
    parser = subparsers.add_parser(
        "run",
        description=help_text(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", metavar="PROMPT", help="what to do; - reads it from stdin")
    add_agent_options(parser)
    parser.add_argument("--json", action="store_true", help="one JSON event per line instead of a transcript")
    parser.add_argument("--full", action="store_true", help="tool results in full")
    add_output_schema_option(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    settings = Settings.load(args)
    # A missing key or an unusable schema is said before anyone types a prompt on stdin.
    model = settings.model()
    output = read_output_schema(args.output_schema, model) if args.output_schema else None
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        raise CommandError("the prompt is empty", status=USAGE)
    # With the prompt on stdin there is nobody left there to ask.
    interactive = args.prompt != "-" and stdin_is_terminal()
    spec, policy = build_spec(settings, interactive=interactive, model=model, output=output)
    if settings.permission == "ask" and not interactive and settings.tools != "none":
        print(
            "agentrio: stdin is not a terminal: calls that need approval will be refused "
            "(use --permission allow or read-only)",
            file=sys.stderr,
        )
    stop_reason = trio.run(_run_agent, settings, spec, policy, prompt, args)
    return exit_status(stop_reason)


async def _run_agent(
    settings: Settings, spec: AgentSpec, policy: TerminalPolicy, prompt: str, args: argparse.Namespace
) -> str:
    async with open_runtime(settings) as rt:
        agent = await open_agent(rt, spec, settings)
        if said := sandbox_said(settings):
            print(f"agentrio: {said}", file=sys.stderr)
        if args.json:
            output: JsonOutput | TranscriptOutput = JsonOutput()
        else:
            # With typed output, stdout is for the output alone.
            console = terminal_console(stderr=spec.output_spec is not None)
            output = TranscriptOutput(console, full=args.full)
        with trio.open_signal_receiver(signal.SIGINT) as interrupts:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_cancel_on_interrupt, interrupts, agent, output, nursery.cancel_scope)
                result = await output.follow(agent, prompt, policy)
                nursery.cancel_scope.cancel()
        if not args.json:
            print(
                f"session {agent.session_id} (continue it with --resume {agent.session_id})", file=sys.stderr
            )
        if said := advice(result.stop_reason, max_turns=settings.max_turns, session_id=agent.session_id):
            print(f"agentrio: {said}", file=sys.stderr)
        if spec.output_spec is not None:
            _print_output(spec.output_spec, result, args)
        return result.stop_reason


def _print_output(output: OutputSpec, result: RunResult, args: argparse.Namespace) -> None:
    """The validated JSON on stdout, or why there is none on stderr."""
    if result.stop_reason == "completed":
        data = output.dump(result.output)
        print(json.dumps({"type": "output", "output": data} if args.json else data, ensure_ascii=False))
    elif result.stop_reason == "output_invalid":
        print(f"agentrio: no answer fit {args.output_schema}: {result.error}", file=sys.stderr)


async def _cancel_on_interrupt(
    interrupts: AsyncIterator[int],
    agent: Agent,
    output: JsonOutput | TranscriptOutput,
    scope: trio.CancelScope,
) -> None:
    """The first Ctrl-C cancels the run (and a question being asked), which
    then ends as ``aborted`` with its history kept valid; a second stops
    waiting for that."""
    async for _ in interrupts:
        output.asking.cancel()
        await agent.cancel()
        break
    async for _ in interrupts:
        scope.cancel()
        raise KeyboardInterrupt


async def _follow(agent: Agent, prompt: str, on_event: Callable[[Event], Awaitable[None]]) -> RunResult:
    """Run ``prompt``, giving every event of the run to ``on_event`` (async),
    until the run's ``agent_end``; the run's result."""
    results: list[RunResult] = []

    async def run() -> None:
        results.append(await agent.run(prompt))

    async with agent.subscribe() as events, trio.open_nursery() as nursery:
        nursery.start_soon(run)
        async for event in events:
            await on_event(event)
            if isinstance(event, AgentEnd):
                break
    return results[0]


class JsonOutput:
    """One line of JSON per event, in ``agentrio.messages.converter``'s form."""

    def __init__(self) -> None:
        #: The scope of the question being asked, cancelled by Ctrl-C.
        self.asking = trio.CancelScope()

    async def follow(self, agent: Agent, prompt: str, policy: TerminalPolicy) -> RunResult:
        async def on_event(event: Event) -> None:
            print(json.dumps(converter.unstructure(event, Event), ensure_ascii=False), flush=True)
            if isinstance(event, ApprovalRequest):
                with self.asking:
                    await _ask(agent, event, policy, Console(stderr=True, highlight=False))
                self.asking = trio.CancelScope()

        return await _follow(agent, prompt, on_event)


class TranscriptOutput:
    def __init__(self, console: Console, *, full: bool) -> None:
        self.console = console
        self.view = LiveView(console, full=full)
        self.asking = trio.CancelScope()

    async def follow(self, agent: Agent, prompt: str, policy: TerminalPolicy) -> RunResult:
        async def on_event(event: Event) -> None:
            self.view(event)
            if isinstance(event, ApprovalRequest):
                with self.asking, self.view.paused():
                    await _ask(agent, event, policy, self.console)
                self.asking = trio.CancelScope()

        with self.view.live():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.view.ticking)
                stop = await _follow(agent, prompt, on_event)
                nursery.cancel_scope.cancel()
        return stop


async def _ask(agent: Agent, event: ApprovalRequest, policy: TerminalPolicy, console: Console) -> None:
    """Ask on the terminal about a tool call, answered by one key (``APPROVAL_KEYS``;
    ``d`` shows the whole summary). Ctrl-C there is Ctrl-C: it cancels the run."""
    if not console.is_terminal:
        console = Console(stderr=True, highlight=False)  # the transcript goes to a file or a pipe
    for line in approval_question(event):
        console.print(line)
    console.print(Text(f"  {approval_choices(event)}", style="yellow"))
    async with open_terminal() as terminal:
        with cbreak(terminal.fileno()):
            async for key in keys(terminal):
                if key == CTRL_C:
                    signal.raise_signal(signal.SIGINT)  # the run's own Ctrl-C handling takes it from here
                elif key == DETAILS:
                    for line in approval_question(event, full=True):
                        console.print(line)
                elif isinstance(key, str) and key.lower() in APPROVAL_KEYS:
                    said = await answer_approval(agent, event, policy, key.lower())
                    console.print(Text(f"  {event.tool_name}: {said}", style="dim"))
                    return
