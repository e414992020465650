"""An agent for a terminal command: its spec from the settings, its stored
session, and the permission policy a person answers."""

from __future__ import annotations

import logging
import re
import shlex
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import attrs

from ..actors import Agent, AgentSpec, Limits
from ..events import ApprovalRequest
from ..journal import SessionHeld, SQLiteStore, StoreError
from ..messages import ToolCall
from ..models import Model, OutputSpec
from ..supervisors import Runtime
from ..tools import Tool
from ..tools.builtin import coding_tools
from ..tools.permissions import Decision, Policy, decide
from ..tools.todo import todo_tool
from ..tracing.otlp import exporting_from_env
from .errors import USAGE, CommandError
from .options import Settings, permission_policy, resolve_sandbox

#: The exit status of a command whose session is open for writing elsewhere
#: (another ``agentrio run``/``chat``/``serve`` has it): try again once it ends.
SESSION_HELD_STATUS = 7

SYSTEM_PROMPT = (
    "You are a coding agent working in the directory {cwd}. Use the tools to read, search and change "
    "files there and to run commands; keep changes minimal and say briefly what you did."
)


#: Shell syntax that runs more than one command or redirects: such a command
#: is never allowed by an "always" given for a prefix.
_COMPOUND = re.compile(r"[;&|<>`\n]|\$\(")
#: Commands whose second word is a subcommand (``git status``, ``npm test``).
_WITH_SUBCOMMANDS = frozenset(
    ("git", "gh", "npm", "npx", "pnpm", "yarn", "cargo", "go", "pip", "pip3", "uv", "poetry", "docker")
    + ("kubectl", "helm", "make", "just", "dotnet", "mvn", "gradle", "bundle", "rake", "terraform")
    + ("systemctl", "brew", "apt", "apt-get")
)
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_:-]*")


def command_prefix(command: str) -> str:
    """What "always" allows of a shell command: its first word, and its
    subcommand for a tool that has them (``git status``, ``ls``, ``touch``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if len(words) > 1 and words[0] in _WITH_SUBCOMMANDS and _SUBCOMMAND.fullmatch(words[1]):
        return " ".join(words[:2])
    return " ".join(words[:1])


@attrs.frozen
class AlwaysRule:
    """A person's "always": every call of ``tool``, or, for a shell tool,
    the simple commands that start with ``prefix``."""

    tool: str
    prefix: str | None = None

    @classmethod
    def for_call(cls, call: ToolCall) -> AlwaysRule:
        command = call.arguments.get("command")
        if call.name == "bash" and isinstance(command, str) and command_prefix(command):
            return cls(call.name, command_prefix(command))
        return cls(call.name)

    def allows(self, call: ToolCall) -> bool:
        if call.name != self.tool:
            return False
        if self.prefix is None:
            return True
        command = call.arguments.get("command")
        if not isinstance(command, str) or _COMPOUND.search(command):
            return False
        words = command.split()
        return words[: len(self.prefix.split())] == self.prefix.split()

    def __str__(self) -> str:
        return f"{self.tool} {self.prefix} …" if self.prefix else f"{self.tool}, every call"


@attrs.define
class TerminalPolicy:
    """The settings' policy, except that calls a person allowed "always"
    (``AlwaysRule``) run without asking, and that with nobody to ask
    (``interactive=False``) an ask is a refusal that says why."""

    base: Policy
    interactive: bool
    always: list[AlwaysRule] = attrs.field(factory=list)

    async def __call__(self, call: ToolCall, tool: Tool) -> Decision:
        if any(rule.allows(call) for rule in self.always):
            return Decision("allow")
        decision = await decide(self.base, call, tool)
        if decision == "ask" and not self.interactive:
            return Decision(
                "deny",
                f"{call.name} needs a person's approval and stdin is not a terminal to ask on "
                "(run with --permission allow to allow it)",
            )
        return decision


def build_spec(
    settings: Settings, *, interactive: bool, model: Model | None = None, output: OutputSpec | None = None
) -> tuple[AgentSpec, TerminalPolicy]:
    """The agent of a command: ``model`` (else the settings' own), asked for
    ``output`` when given."""
    policy = TerminalPolicy(permission_policy(settings.permission), interactive)
    model = model or settings.model()  # a missing key is said before anything else
    tools: list[Tool] = []
    if settings.tools == "coding":
        sandbox, _ = resolve_sandbox(settings.sandbox, settings.permission)
        tools = [*coding_tools(settings.cwd, sandbox=sandbox), todo_tool()]
    spec = AgentSpec(
        "agentrio",
        model,
        system_prompt=settings.system_prompt or SYSTEM_PROMPT.format(cwd=settings.cwd),
        tools=tools,
        permission=policy,
        limits=Limits(max_turns=settings.max_turns),
        output_type=output,
    )
    return spec, policy


def sandbox_said(settings: Settings) -> str | None:
    """What a command says of its tools' sandbox when it starts; None
    without tools."""
    return resolve_sandbox(settings.sandbox, settings.permission)[1] if settings.tools == "coding" else None


#: The keys that answer an approval, one press each; ``DETAILS`` shows the whole summary first.
APPROVAL_KEYS = ("y", "n", "a", "s")
DETAILS = "d"


def approval_choices(event: ApprovalRequest) -> str:
    """The answers to ``event``, each on its key."""
    return f"y yes · n no · a always: {AlwaysRule.for_call(event.call)} · s stop the run · d details"


async def answer_approval(agent: Agent, event: ApprovalRequest, policy: TerminalPolicy, choice: str) -> str:
    """Answer ``event`` with a person's ``choice`` (one of ``APPROVAL_KEYS``);
    what was decided, for the transcript. An approval settled meanwhile (the
    run was cancelled) is left alone."""
    rule = AlwaysRule.for_call(event.call)
    if choice == "a":
        policy.always.append(rule)
    decision, reason, said = {
        "y": ("approve", None, "allowed"),
        "a": ("approve", None, f"allowed, and from now on: {rule}"),
        "n": ("deny", "the person at the terminal said no", "refused"),
        "s": ("deny_and_stop", "the person at the terminal stopped the run", "refused; the run stops"),
    }[choice]
    try:
        await agent.answer(event.request_id, decision, reason)
    except (LookupError, ValueError):
        return "already settled"
    return said


@asynccontextmanager
async def open_runtime(settings: Settings) -> AsyncIterator[Runtime]:
    """A Runtime on the settings' store; store errors are told plainly.
    Spans are exported while it runs when an OTLP endpoint is set."""
    try:
        Path(settings.db).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot make the store's folder: {exc}") from None
    try:
        with logging_to(log_path(settings.db)):
            async with exporting_from_env(), SQLiteStore(settings.db) as store, Runtime(store) as rt:
                yield rt
    except StoreError as exc:
        raise CommandError(str(exc)) from None


def log_path(db: str) -> str:
    """Where a terminal command's log goes: beside its database."""
    return f"{db}.log"


@contextmanager
def logging_to(path: str) -> Iterator[None]:
    """While it lasts, what the library logs (the traceback of a run that
    failed, say) is appended to ``path``, created when first written, and
    not drawn over the live transcript, which tells the error in one line."""
    logger = logging.getLogger("agentrio")
    handler = logging.FileHandler(path, delay=True, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        handler.close()


async def open_agent(rt: Runtime, spec: AgentSpec, settings: Settings) -> Agent:
    """The agent of the settings' session: restored when the store holds it,
    else new, and then said on stderr ("new session ID"), so that a
    mistyped id is seen; with ``resume`` a session not in the store is a
    usage error. A session open in another process is a one-line error
    (exit status ``SESSION_HELD_STATUS``)."""
    session_id = settings.session
    try:
        stored = session_id is not None and any(
            info.session_id == session_id for info in await rt.store.list_sessions()
        )
        if settings.resume and not stored:
            raise CommandError(
                f"no session {session_id!r} in {settings.db} (agentrio sessions list shows them; "
                "--session ID starts a new one)",
                status=USAGE,
            )
        agent = await rt.create(spec, session_id=session_id)
        if not stored:
            print(f"new session {agent.session_id}", file=sys.stderr, flush=True)
        return agent
    except SessionHeld as exc:
        raise CommandError(str(exc), status=SESSION_HELD_STATUS) from None
    except StoreError as exc:
        raise CommandError(str(exc)) from None
