"""``agentrio chat``: talk with a coding agent in the terminal.

Type a line and press Enter. While the agent works, a line you send steers
it (it joins the current turn before the next model request); a line that
starts with ``>>`` is queued as a follow-up (a turn of its own, after this
one). The queue shows under the transcript. Esc or Ctrl-C cancels the turn;
pressed twice in a row, it leaves. The line is edited as in a shell: ←/→,
Home/End, Ctrl-A/E/W/U/K/Y, ↑/↓ and Ctrl-R for what was sent before (in
this chat or an earlier one); Alt-Enter or a trailing backslash starts a
new line, and a paste is one message however many lines it has. Tool calls
that need approval are answered with one key: y(es), n(o), a(lways: the
tool, or for bash the command's first word or two, as shown), s(top the
run), d(etails: the whole diff or script). Every chat is a stored
session: ``--resume ID`` continues one (exit status 2 when the store has no
such session, 7 when another process has it open); ``--session ID``
continues it or starts a new session under that id.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

import attrs
import trio
from rich.console import Console
from rich.text import Text

from ..actors import Agent, AgentSpec
from ..events import (
    AgentEnd,
    AgentStart,
    ApprovalRequest,
    Event,
    Inbox,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from ..journal import ForkRefused, SessionHeld, SessionNotFound
from ..supervisors import Runtime
from . import CommandParsers
from .advice import advice
from .errors import CommandError
from .line_editor import History, LineEditor
from .live_view import LiveView, approval_question, safe, terminal_console
from .options import Settings, add_agent_options, checked_url, help_text
from .paths import history_file
from .render import one_line
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
from .session_tree import session_tree
from .sessions import titles
from .terminal import (
    CTRL_C,
    CTRL_D,
    ESC,
    Paste,
    bracketed_paste,
    cbreak,
    keys,
    open_terminal,
    stdin_is_terminal,
)
from .transcript import cost_text, timestamp

HELP = r"""Enter sends a line; while the agent works it steers the current turn.
>> text   queues a follow-up turn
Esc, Ctrl-C   cancel the turn; twice in a row: quit
Alt-Enter, or \ at the end   a new line; a paste stays one message
Up/Down, Ctrl-R   earlier lines; Ctrl-A/E/W/U/K edit as in a shell
/help                this help
/sessions            the stored sessions
/resume ID           continue a stored session
/fork N              a new session from the first N messages of this one
/usage               tokens used by this session
/model [PROVIDER:MODEL [URL]]  show or change the model (and its base URL)
/clear               start a new session
/quit                leave (Ctrl-D on an empty line too)"""


def register(subparsers: CommandParsers) -> None:
    parser = subparsers.add_parser(
        "chat",
        description=help_text(__doc__),
        epilog="slash commands:\n" + "\n".join(f"  {line}" for line in HELP.splitlines() if line[:1] == "/"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_agent_options(parser)
    parser.add_argument("--full", action="store_true", help="tool results in full")
    parser.set_defaults(handler=_chat)


def _chat(args: argparse.Namespace) -> int:
    if not stdin_is_terminal():
        raise CommandError("chat needs a terminal; for scripts use agentrio run (PROMPT, or - for stdin)")
    settings = Settings.load(args)
    spec, policy = build_spec(settings, interactive=True)
    trio.run(_main, settings, spec, policy, args.full)
    return 0


async def _main(settings: Settings, spec: AgentSpec, policy: TerminalPolicy, full: bool) -> None:
    console = terminal_console()
    async with open_runtime(settings) as rt:
        agent = await open_agent(rt, spec, settings)
        chat = Chat(rt, settings, spec, policy, console, full=full)
        await chat.serve(agent)
        console.print(
            Text(
                f"session {chat.agent.session_id} is stored; continue it with "
                f"agentrio chat --resume {chat.agent.session_id}",
                style="dim",
            )
        )


@attrs.define
class _Queued:
    target: str
    text: str


class Chat:
    """The conversation: one agent at a time (``/resume``, ``/fork``,
    ``/clear`` and ``/model`` switch it), the line being typed, the queue of
    steering and follow-ups, and the approvals waiting for an answer. Its
    state is touched only by the tasks of ``serve``, all in one trio run."""

    def __init__(
        self,
        rt: Runtime,
        settings: Settings,
        spec: AgentSpec,
        policy: TerminalPolicy,
        console: Console,
        *,
        full: bool,
    ) -> None:
        self.rt = rt
        self.settings = settings
        self.spec = spec
        self.policy = policy
        self.console = console
        self.view = LiveView(console, full=full, footer=self._footer)
        self.agent: Agent
        self.editor = LineEditor(History(history_file()))
        self.queue: dict[str, _Queued] = {}
        self.approvals: list[ApprovalRequest] = []
        #: Esc / Ctrl-C presses in a row.
        self.interrupts = 0
        self.running = False
        self._follower: trio.CancelScope | None = None
        self._nursery: trio.Nursery  # serve's
        self._quit = trio.Event()

    # -- the screen's live part ------------------------------------------------------

    def _footer(self) -> list[Text]:
        lines: list[Text] = []
        for queued in self.queue.values():
            kind = "steer" if queued.target == "next_step" else "follow-up"
            lines.append(Text(f"  ↳ queued {kind}: {safe(one_line(queued.text, 80))}", style="magenta"))
        if self.approvals:
            lines.extend(approval_question(self.approvals[0]))
            lines.append(Text(f"  {approval_choices(self.approvals[0])}", style="yellow"))
        elif self.interrupts:
            lines.append(Text("  press Esc or Ctrl-C again to quit", style="dim"))
        elif self.running:
            lines.append(Text("  Enter steers · >> queues a follow-up · Esc cancels", style="dim"))
        lines.extend(self.editor.render())
        return lines

    def say(self, text: str, style: str = "dim") -> None:
        self.view.print(text, style)

    # -- running -------------------------------------------------------------------------

    async def serve(self, agent: Agent) -> None:
        async with open_terminal() as terminal:
            with cbreak(terminal.fileno()), bracketed_paste(self.console.file), self.view.live():
                # Once keys are read one by one: nothing typed from here on is echoed twice.
                self.say(
                    f"agentrio chat · session {agent.session_id} · {self._model_name()} · /help for help"
                )
                if said := sandbox_said(self.settings):
                    self.say(said)
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    await self._switch_to(agent)
                    nursery.start_soon(self.view.ticking)
                    nursery.start_soon(self._read_keys, terminal)
                    await self._quit.wait()
                    nursery.cancel_scope.cancel()

    async def _switch_to(self, agent: Agent) -> None:
        """Talk to ``agent`` from now on; returns once its events are followed."""
        if self._follower is not None:
            self._follower.cancel()
        self.agent = agent
        self.queue.clear()
        self.approvals.clear()
        self.running = agent.status == "running"
        self.view.recap(agent.messages)
        self._follower = trio.CancelScope()
        await self._nursery.start(self._follow, agent, self._follower)

    async def _follow(
        self,
        agent: Agent,
        scope: trio.CancelScope,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        with scope:
            async with agent.subscribe() as events:
                task_status.started()
                async for event in events:
                    self._track(event)
                    self.view(event)
                    if isinstance(event, AgentEnd) and (
                        said := advice(event.stop_reason, max_turns=self.settings.max_turns)
                    ):
                        self.say(said, "yellow")

    def _track(self, event: Event) -> None:
        match event:
            case AgentStart():
                self.running = True
            case AgentEnd():
                self.running = False
                self.approvals.clear()
            case Inbox():
                for queued in event.removed:
                    self.queue.pop(queued.id, None)
                for queued in event.inserted:
                    self.queue[queued.id] = _Queued(event.target, queued.message.text)
            case ApprovalRequest():
                self.approvals.append(event)
            case ToolExecutionStart() | ToolExecutionEnd():
                # An approval that was asked and has been settled (by a cancel, say).
                self.approvals = [a for a in self.approvals if a.call.id != event.tool_call_id]
            case _:
                # What the chat keeps beside the transcript: whether a run is
                # in progress, the queue and the open approvals.
                pass

    # -- keys --------------------------------------------------------------------------------

    async def _read_keys(self, terminal: trio.lowlevel.FdStream) -> None:
        async for key in keys(terminal):
            await self._key(key)
            self.view.refresh()
        self._quit.set()

    async def _key(self, key: str | Paste) -> None:
        if key == CTRL_C or (key == ESC and not self.editor.searching):
            await self._interrupt()
            return
        self.interrupts = 0
        # A key answers the first open approval while nothing is being typed.
        answer = key.lower() if self.approvals and not self.editor.text and isinstance(key, str) else None
        if answer is not None and answer in APPROVAL_KEYS:
            await self._answer(answer)
        elif answer == DETAILS:
            for question in approval_question(self.approvals[0], full=True):
                self.view.print(question)
        elif key == CTRL_D and not self.editor.text:
            self._quit.set()
        elif (line := self.editor.handle(key)) is not None:
            await self._submit(line.strip())

    async def _interrupt(self) -> None:
        self.interrupts += 1
        if self.interrupts >= 2:
            self._quit.set()
        elif self.running:
            await self.agent.cancel()
            self.say("cancelling the turn…", "yellow")
        else:
            self.editor = LineEditor(History(history_file()))

    async def _answer(self, choice: str) -> None:
        event = self.approvals.pop(0)
        said = await answer_approval(self.agent, event, self.policy, choice)
        # The question leaves the live region: what was asked stays in the transcript with its answer.
        for line in approval_question(event):
            self.view.print(line)
        self.say(f"{event.tool_name}: {said}")

    async def _submit(self, line: str) -> None:
        if not line:
            return
        if line.startswith("/"):
            await self._command(line)
        elif line.startswith(">>"):
            if text := line[2:].strip():
                await self.agent.followup(text)
        elif self.running:
            await self.agent.steer(line)
        else:
            await self.agent.followup(line)

    # -- slash commands ----------------------------------------------------------------

    async def _command(self, line: str) -> None:
        name, _, argument = line.partition(" ")
        argument = argument.strip()
        command = COMMANDS.get(name)
        if command is None:
            self.say(f"unknown command {name}; /help lists them", "red")
            return
        needs_idle, run = command
        if needs_idle and self.running:
            self.say(f"{name} waits for the turn to end (Esc cancels it)", "red")
            return
        try:
            await run(self, argument)
        except CommandError as exc:
            self.say(str(exc), "red")

    async def _help(self, argument: str) -> None:
        self.say(HELP)

    async def _quit_command(self, argument: str) -> None:
        self._quit.set()

    async def _usage(self, argument: str) -> None:
        usage = self.agent.usage
        self.say(
            f"session {self.agent.session_id}: {usage.input_tokens:,} input, {usage.output_tokens:,} output, "
            f"{usage.cache_read_tokens:,} cache read, {usage.cache_write_tokens:,} cache write tokens"
            f"{cost_text(usage)}"
        )

    async def _sessions(self, argument: str) -> None:
        nodes = session_tree(await self.rt.store.list_summaries())
        named = await titles(self.rt.store, nodes)
        for node in nodes:
            info, summary = node.summary.info, node.summary
            mark = "*" if info.session_id == self.agent.session_id else " "
            relation = f"  {node.relation}" if node.relation != "-" else ""
            title = f"  “{named[info.session_id]}”" if named[info.session_id] else ""
            self.say(
                f"{mark} {node.prefix}{info.session_id}  {info.agent_name or '-'}  {summary.messages} messages  "
                f"{timestamp(summary.updated_at)}{relation}{title}"
            )

    async def _resume(self, argument: str) -> None:
        if not argument:
            raise CommandError("/resume needs a session ID (/sessions lists them)")
        if argument == self.agent.session_id:
            return
        try:
            await self.rt.store.load_state(argument)
        except SessionNotFound:
            raise CommandError(f"no session {argument!r}") from None
        # Opened before this session is closed: one open elsewhere leaves the chat as it was.
        try:
            agent = await self.rt.create(self.spec, session_id=argument)
        except SessionHeld as exc:
            raise CommandError(f"cannot resume it: {exc}") from None
        await self.rt.dispose(self.agent)
        await self._switch_to(agent)
        self.say(f"resumed session {argument} ({len(self.agent.messages)} messages)")

    async def _fork(self, argument: str) -> None:
        try:
            at = int(argument)
        except ValueError:
            raise CommandError("/fork needs a number of messages to keep") from None
        source = self.agent
        try:
            agent = await self.rt.fork(source.session_id, at_message=at, spec=self.spec)
        except (ForkRefused, ValueError) as exc:
            raise CommandError(f"cannot fork there: {exc}") from None
        await self.rt.dispose(source)
        await self._switch_to(agent)
        self.say(f"forked {source.session_id} into {agent.session_id} with its first {at} messages")

    async def _model(self, argument: str) -> None:
        if not argument:
            self.say(f"model: {self._model_name()}")
            return
        name, _, url = argument.partition(" ")
        if url.strip():
            base_url = checked_url(url.strip())
        elif name.partition(":")[0] == (self.settings.model_name or "").partition(":")[0]:
            base_url = self.settings.base_url
        else:
            base_url = None  # another provider: the endpoint given for the last one is not its
        settings = attrs.evolve(self.settings, model_name=name, base_url=base_url)
        self.spec = attrs.evolve(self.spec, model=settings.model())
        self.settings = settings
        session_id = self.agent.session_id
        await self._replace(lambda: self.rt.create(self.spec, session_id=session_id))
        self.say(f"model: {self._model_name()}")

    async def _clear(self, argument: str) -> None:
        await self._replace(lambda: self.rt.create(self.spec))
        self.say(f"new session {self.agent.session_id}")

    async def _replace(self, create: Callable[[], Awaitable[Agent]]) -> None:
        """Close this session and open another."""
        await self.rt.dispose(self.agent)
        await self._switch_to(await create())

    def _model_name(self) -> str:
        model = self.spec.model
        return f"{getattr(model, 'provider', '?')}:{getattr(model, 'model', '?')}"


COMMANDS: dict[str, tuple[bool, Callable[[Chat, str], Awaitable[None]]]] = {
    "/help": (False, Chat._help),
    "/quit": (False, Chat._quit_command),
    "/exit": (False, Chat._quit_command),
    "/usage": (False, Chat._usage),
    "/sessions": (False, Chat._sessions),
    "/resume": (True, Chat._resume),
    "/fork": (True, Chat._fork),
    "/model": (True, Chat._model),
    "/clear": (True, Chat._clear),
}
