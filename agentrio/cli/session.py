"""An agent for a terminal command: its spec from the settings, its stored
session, and the permission policy a person answers."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import attrs

from ..actors import Agent, AgentSpec, Limits
from ..events import Event
from ..journal import SessionHeld, SQLiteStore, StoreError
from ..messages import ToolCall
from ..models import Model, OutputSpec
from ..supervisors import Runtime
from ..tools import Tool
from ..tools.builtin import coding_tools
from ..tools.permissions import Decision, Policy, decide
from ..tracing.otlp import exporting_from_env
from .errors import CommandError
from .options import Settings, permission_policy, resolve_sandbox

#: The exit status of a command whose session is open for writing elsewhere
#: (another ``agentrio run``/``chat``/``serve`` has it): try again once it ends.
SESSION_HELD_STATUS = 7

SYSTEM_PROMPT = (
    "You are a coding agent working in the directory {cwd}. Use the tools to read, search and change "
    "files there and to run commands; keep changes minimal and say briefly what you did."
)


@attrs.define
class TerminalPolicy:
    """The settings' policy, except that tools a person allowed "always" run
    without asking, and that with nobody to ask (``interactive=False``) an
    ask is a refusal that says why."""

    base: Policy
    interactive: bool
    always: set[str] = attrs.field(factory=set)

    async def __call__(self, call: ToolCall, tool: Tool) -> Decision:
        if tool.name in self.always:
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
        tools = coding_tools(settings.cwd, sandbox=sandbox)
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


APPROVAL_CHOICES = "[y]es / [n]o / [a]lways for this tool / [s]top"


async def answer_approval(agent: Agent, event: Event, policy: TerminalPolicy, choice: str) -> str:
    """Answer ``event`` with a person's ``choice`` (``y``, ``n``, ``a`` or
    ``s``); what was decided, for the transcript. An approval settled
    meanwhile (the run was cancelled) is left alone."""
    if choice == "a":
        policy.always.add(event.tool_name)
    decision, reason, said = {
        "y": ("approve", None, "allowed"),
        "a": ("approve", None, f"allowed, and {event.tool_name} from now on"),
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


async def open_agent(rt: Runtime, spec: AgentSpec, session_id: str | None) -> Agent:
    """The agent of ``session_id``: restored when the store holds it, else
    new. A session open in another process is a one-line error (exit status
    ``SESSION_HELD_STATUS``)."""
    try:
        return await rt.create(spec, session_id=session_id)
    except SessionHeld as exc:
        raise CommandError(str(exc), status=SESSION_HELD_STATUS) from None
    except StoreError as exc:
        raise CommandError(str(exc)) from None
