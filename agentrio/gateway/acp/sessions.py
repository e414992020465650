"""Live sessions shared by every client of one gateway.

A ``Session`` is one agent and the clients attached to it. Its pump is the
only reader of the agent's events: it turns each into ACP updates and queues
them on every attached client without ever waiting (a client that cannot
keep up is dropped by its own bounded queue, see ``Peer``), so no client
slows the agent or another client.
"""

from __future__ import annotations

import base64
import itertools
import logging
import shlex
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from ... import events as ev
from ...actors import Agent, AgentScope, AgentSpec, Subscription
from ...journal import ForkRefused, JournalCorrupt, SessionHeld, SessionNotFound, StoreCorrupt
from ...journal.fork import fork_session
from ...journal.records import MAX_TITLE, SessionRenamed
from ...mailbox import QueuedInput
from ...messages import AssistantMessage, Image, Part, Text, ToolCall, UserMessage
from ...supervisors import Runtime
from ...tools import Tool
from ...tools.builtin import coding_tools
from ...tools.builtin.common import ToolInputError
from ...tools.builtin.workspace import Workspace
from ...tools.permissions import Decision, decide
from ...tools.sandbox import Sandbox, SandboxUnavailable
from .files import FILE_TOOLS, ClientFiles, through_client
from .jsonrpc import BUSY, INTERNAL_ERROR, INVALID_PARAMS, Peer, PeerGone, RpcError
from .modes import SessionModes, model_name, model_option, sandbox_modes, sandbox_option
from .outbox import encode
from .terminals import ClientTerminals, through_terminal, uses_client_terminals
from .updates import (
    ToolCallView,
    UpdateMapper,
    acp_stop_reason,
    history_updates,
    status_update,
    user_updates,
)

if TYPE_CHECKING:
    from .remote import RemoteSession, RemoteSessions

log = logging.getLogger("agentrio.gateway")

RESOURCE_NOT_FOUND = -32002
#: ``session/load`` of a session that another process (or runtime) has open
#: for writing; ``data`` holds ``sessionId`` and ``holder`` (who, if known).
SESSION_HELD = -32010
#: ``session/new`` or ``session/load`` whose MCP servers the permission
#: policy (or the person asked) refused to start.
REFUSED = -32012
#: Prompts one session holds at once (running or waiting for their turn);
#: one more is refused with ``BUSY``.
MAX_PROMPTS = 16

#: What a prompt gives its user message: text, or text and images.
Content = str | list[Text | Image]

PERMISSION_OPTIONS = [
    {"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
]

#: ``spec_for(cwd)``: the spec of a new session's agent working in ``cwd``.
SpecFactory = Callable[[Path], AgentSpec]
#: ``model_for("provider:model")``: the model adapter of that name (``ValueError`` if none).
ModelFactory = Callable[[str], Any]


@attrs.frozen
class SandboxedTools:
    """The built-in tools a session's sandbox bounds: the gateway's
    ``sandbox`` (None: off), and ``make(sandbox)``, which makes them anew
    for another (``SandboxUnavailable`` when it cannot be enforced)."""

    sandbox: Sandbox | None
    make: Callable[[Sandbox | None], list[Tool]]


#: The built-in tools whose ``path`` must lie in the session's workspace.
PATH_TOOLS = frozenset({"read", "write", "edit", "ls", "glob", "grep"})


class RememberedChoices:
    """A session's permission policy: the configured one, except that a tool
    the person answered "always" for is no longer asked about. It only ever
    replaces an ``ask``; a policy's ``deny`` stands. With ``workspace`` (the
    session's tools are agentrio's built-ins), a call whose ``path`` the
    tool would refuse (outside the workspace) is denied, with the tool's
    reason, rather than asked about."""

    def __init__(self, policy: Callable[..., Any] | None, workspace: Path | None = None) -> None:
        self.policy = policy
        self._workspace = None if workspace is None else Workspace.of(workspace)
        self.always: dict[str, str] = {}

    async def __call__(self, call: ToolCall, tool: Tool) -> str:
        if self.policy is None:
            return "allow"
        decision = await decide(self.policy, call, tool)
        if decision == "ask" and tool.name in self.always:
            return self.always[tool.name]
        if decision == "ask" and (refused := self._refused(call)):
            return Decision("deny", refused)
        return decision

    def _refused(self, call: ToolCall) -> str | None:
        """Why the built-in tool would refuse ``call``'s path, if it would."""
        path = call.arguments.get("path")
        if self._workspace is None or call.name not in PATH_TOOLS or not isinstance(path, str):
            return None
        try:
            self._workspace.resolve(path)
        except ToolInputError as exc:
            return str(exc)
        return None


@attrs.define(eq=False)
class _Prompt:
    done: trio.Event = attrs.field(factory=trio.Event)
    stop_reason: str = "aborted"
    error: str | None = None


@attrs.define(eq=False)
class _Approval:
    event: ev.ApprovalRequest
    call_id: str
    settled: bool = False
    #: One per client it is offered to.
    offers: list[trio.CancelScope] = attrs.field(factory=list)

    def settle(self) -> None:
        self.settled = True
        for scope in self.offers:
            scope.cancel()


def _title(messages: tuple[Any, ...]) -> str | None:
    """A session's first prompt, shortened, to tell it apart in a list."""
    for message in messages:
        if isinstance(message, UserMessage) and (text := " ".join(message.text.split())):
            return text if len(text) <= 60 else text[:59] + "…"
    return None


def _context_tokens(messages: Sequence[Any]) -> int:
    """The tokens in context after the latest model response among
    ``messages``: what its request took in, and what it gave (0 if none)."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            usage = message.usage
            return (
                usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens
            )
    return 0


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


class Session:
    """One agent and its attached clients.

    Every attached client sees the session's updates in the order the agent
    emitted them. A prompt's response is queued after every update of the
    run that answered it (the pump resolves prompts when it handles that
    run's ``agent_end``). Approvals are offered to every attached client; the
    first answer counts, and a request nobody can answer waits for the next
    client that attaches.

    A client that loads the session gets the committed history and what is
    in flight (the message streaming, the calls running) at a moment when
    the pump has handled every event emitted so far, then the live updates:
    nothing missing, nothing twice. (A child agent's own transcript is not
    part of its parent's history: it is shown live only.)
    """

    def __init__(
        self,
        agent: Agent,
        cwd: Path,
        choices: RememberedChoices,
        files: ClientFiles,
        nursery: trio.Nursery,
        terminals: ClientTerminals | None = None,
        model_for: ModelFactory | None = None,
        sandboxed: SandboxedTools | None = None,
    ) -> None:
        self.agent = agent
        self.id = agent.session_id
        self.cwd = cwd
        self.choices = choices
        self.files = files
        self.terminals = terminals or ClientTerminals(self.id)
        self.terminals.announced = self._caught_up
        #: Its permission modes (``session/set_mode``).
        self.modes = SessionModes.of(choices.policy)
        #: Makes the model of a name, for ``set_model`` (None: the model is fixed).
        self._model_for = model_for
        #: The sandbox modes its built-in tools may take, and the one they are in.
        self._sandboxed = sandboxed
        self.sandbox_mode = "off"
        self._sandbox_modes: list[str] = []
        if sandboxed is not None:
            self._sandbox_modes = sandbox_modes(sandboxed.sandbox)
            self.sandbox_mode = self._sandbox_modes[0]
        #: Tokens in context after the latest model response (ACP's ``usage_update.used``).
        self._context_tokens = _context_tokens(agent.messages)
        #: The usage update broadcast last, so that an unchanged one is not sent again.
        self._usage_told: dict[str, Any] | None = None
        self.peers: list[Peer] = []
        self.status = "idle"
        #: Agent ids of the child agents seen at work in this session.
        self._nursery = nursery
        self._mapper = UpdateMapper(cwd)
        self._origins: dict[str, Peer | None] = {}
        self._prompts: dict[str, _Prompt] = {}
        self._claimed: list[_Prompt] = []
        self._approvals: dict[str, _Approval] = {}
        self._events: Subscription | None = None
        self._drained = trio.Event()
        #: Whether input restored with the session waits for the first client to attach.
        self.resume_pending = False

    # -- clients ----------------------------------------------------------------

    async def attach(self, peer: Peer, *, replay: bool, files: bool = False, terminals: bool = False) -> None:
        """Attach ``peer``; with ``replay``, first queue for it the history
        and what is in flight (from the same moment, and with no checkpoint
        before it is attached, so nothing falls in between). The replay is
        made page by page as the client reads it, however long the session.
        With ``files``, the client offered to read and write the session's
        files; with ``terminals``, to run its commands."""
        if replay:
            await self._caught_up()
            updates = itertools.chain(self._mapper.replay(self.agent.messages), [self._status_update()])
            peer.send_stream(self._notification(update) for update in updates)
        if files:
            self.files.offer(peer)
        if terminals:
            self.terminals.offer(peer)
        if peer not in self.peers:
            self.peers.append(peer)
        if self.resume_pending:
            self.resume_pending = False
            await self.agent.resume()  # without waiting for new input
        for approval in self._approvals.values():
            self._nursery.start_soon(self._offer, approval, peer)

    def detach(self, peer: Peer) -> None:
        if peer in self.peers:
            self.peers.remove(peer)

    def _notification(self, update: dict[str, Any]) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": self.id, "update": update},
        }

    def _broadcast(self, update: dict[str, Any], *, skip: Peer | None = None) -> None:
        message = self._notification(update)
        encoded = encode(message)  # once, shared by every client's queue
        for peer in list(self.peers):
            if peer is not skip:
                peer.send(message, encoded)

    def announce_title(self, title: str) -> None:
        """Tell every attached client the session's new title."""
        self._broadcast({"sessionUpdate": "session_info_update", "title": title})

    def tell(self, peer: Peer, update: dict[str, Any]) -> None:
        """Queue ``update`` of this session for ``peer`` alone."""
        peer.send(self._notification(update))

    # -- modes, model, usage ----------------------------------------------------

    @property
    def model(self) -> str:
        """The model's ``provider:model``."""
        return model_name(self.agent.spec.model)

    def config_options(self) -> list[dict[str, Any]]:
        """ACP's ``configOptions``: the mode, the model, and for the built-in
        tools their sandbox."""
        options = [self.modes.option(), model_option(self.model, self._model_for is not None)]
        if self._sandboxed is not None:
            options.append(sandbox_option(self.sandbox_mode, self._sandbox_modes))
        return options

    def setup_state(self) -> dict[str, Any]:
        """What a ``session/new``, ``load``, ``resume`` or ``fork`` answer holds of the session."""
        return {"modes": self.modes.state(), "configOptions": self.config_options()}

    def set_mode(self, mode: str) -> None:
        """Put the session in permission mode ``mode`` (its next permission
        check on follows it) and tell every attached client."""
        if mode not in self.modes.policies:
            raise RpcError(
                INVALID_PARAMS, f"no mode {mode!r}; the modes are {', '.join(self.modes.policies)}"
            )
        if mode != self.modes.current:
            self.modes.current = mode
            self.choices.policy = self.modes.policies[mode]
            self._broadcast({"sessionUpdate": "current_mode_update", "currentModeId": mode})
            self._broadcast({"sessionUpdate": "config_option_update", "configOptions": self.config_options()})

    async def set_model(self, name: str) -> None:
        """Answer with the model ``name`` (``provider:model``) from the next
        turn on, and tell every attached client; refused while a turn runs."""
        if self._model_for is None:
            raise RpcError(INVALID_PARAMS, "this agent's model is set by its spec and cannot be changed")
        if name == self.model:
            return
        if self.status == "running" or self.agent.pending_input:
            raise RpcError(BUSY, "the model changes between turns: wait for this one to end, or cancel it")
        try:
            model = self._model_for(name)
        except ValueError as exc:  # SpecError too
            raise RpcError(INVALID_PARAMS, str(exc)) from None
        agent = self.agent

        async def swap() -> None:
            agent.spec = attrs.evolve(agent.spec, model=model)

        await agent.run_maintenance(swap)
        self._broadcast({"sessionUpdate": "config_option_update", "configOptions": self.config_options()})

    async def set_sandbox(self, mode: str) -> None:
        """Run the built-in tools' commands in sandbox ``mode`` (a stricter
        one than the gateway's, or that) from the next turn on, and tell
        every attached client; refused while a turn runs."""
        if self._sandboxed is None:
            raise RpcError(INVALID_PARAMS, "this agent's tools are its spec's: their sandbox is theirs")
        if mode not in self._sandbox_modes:
            raise RpcError(
                INVALID_PARAMS,
                f"the sandbox can be {', '.join(self._sandbox_modes)} here (never looser than the "
                f"gateway's), not {mode!r}",
            )
        if mode == self.sandbox_mode:
            return
        if self.status == "running" or self.agent.pending_input:
            raise RpcError(BUSY, "the sandbox changes between turns: wait for this one to end, or cancel it")
        base = self._sandboxed.sandbox
        sandbox = None if mode == "off" else attrs.evolve(base or Sandbox(), mode=mode)  # type: ignore[arg-type]
        try:
            tools = {tool.name: tool for tool in self._sandboxed.make(sandbox)}
        except SandboxUnavailable as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from None
        agent = self.agent

        async def swap() -> None:
            agent.tools.update(tools)

        await agent.run_maintenance(swap)
        self.sandbox_mode = mode
        self._broadcast({"sessionUpdate": "config_option_update", "configOptions": self.config_options()})

    def _broadcast_usage(self) -> None:
        """Tell the clients the usage, unless it is what they were told last
        (a turn's end after its last model response)."""
        if (update := self.usage_update()) != self._usage_told:
            self._usage_told = update
            self._broadcast(update)

    def usage_update(self) -> dict[str, Any]:
        """ACP's ``usage_update``: the tokens in context after the latest
        model response, the model's context window (0 when unknown), and
        what the session cost so far in US dollars (none when unknown)."""
        spec = self.agent.spec
        window = spec.limits.context_window or getattr(spec.model, "context_window", None)
        usage = self.agent.usage
        update: dict[str, Any] = {
            "sessionUpdate": "usage_update",
            "used": self._context_tokens,
            "size": window if isinstance(window, int) else 0,
            "_meta": {
                "agentrio": {
                    "inputTokens": usage.input_tokens,
                    "outputTokens": usage.output_tokens,
                    "cacheReadTokens": usage.cache_read_tokens,
                    "cacheWriteTokens": usage.cache_write_tokens,
                }
            },
        }
        if usage.cost is not None:
            update["cost"] = {"amount": usage.cost, "currency": "USD"}
        return update

    def _status_update(self) -> dict[str, Any]:
        """The session's status, and the prompts waiting for a turn (after a
        restart too: they are in the journal)."""
        return status_update(self.status, self.agent.pending_input, self.agent.usage)

    # -- input ------------------------------------------------------------------

    async def prompt(self, text: Content, origin: Peer | None) -> str:
        """Run ``text`` as a follow-up; the ACP stop reason of the run that
        handled it. An error stop is raised as ``RpcError``."""
        if len(self._prompts) >= MAX_PROMPTS:
            raise RpcError(BUSY, f"the session already holds {MAX_PROMPTS} prompts; wait for one to end")
        queued = self._queued(text, origin)
        prompt = self._prompts[queued.id] = _Prompt()
        try:
            await self.agent.followup(queued)
            try:
                await prompt.done.wait()
            finally:
                if not prompt.done.is_set():
                    # The client went away first: withdraw the prompt if no turn took it yet.
                    with trio.CancelScope(shield=True):
                        await self.agent.withdraw(queued.id)
        finally:
            del self._prompts[queued.id]
        return acp_stop_reason(prompt.stop_reason, prompt.error)

    async def steer(self, text: Content, origin: Peer | None) -> str:
        return (await self.agent.steer(self._queued(text, origin))).id

    async def followup(self, text: Content, origin: Peer | None) -> str:
        return (await self.agent.followup(self._queued(text, origin))).id

    def _queued(self, text: Content, origin: Peer | None) -> QueuedInput:
        content: str | list[Part] = text if isinstance(text, str) else [*text]
        queued = QueuedInput(f"input-{uuid.uuid4().hex[:16]}", UserMessage(content))
        self._origins[queued.id] = origin
        return queued

    async def cancel(self) -> None:
        await self.agent.cancel()

    # -- the pump ---------------------------------------------------------------

    async def pump(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with self.agent.subscribe() as events:
            self._events = events
            task_status.started()
            while True:
                if not events:
                    self._drained.set()
                    self._drained = trio.Event()
                try:
                    event = await events.receive()
                except (trio.EndOfChannel, trio.ClosedResourceError):
                    break
                try:
                    self._on_event(event)
                except Exception:
                    log.exception("session %s: could not forward %s", self.id, event.type)
        self._events = None
        self._drained.set()
        for prompt in self._prompts.values():
            prompt.done.set()  # the agent is gone: its prompts end as aborted

    async def _caught_up(self) -> None:
        """Return at a moment when the pump has handled every event emitted
        so far: it waits in ``receive`` on an empty channel (an event handed
        to it would have taken it off the waiting list). A pump that never
        gets there (an agent streaming without pause) is given up on after a
        while: the client may then see a few updates twice."""
        for _ in range(100):
            events = self._events
            if events is None or (not events and events.reader_waiting):
                return
            await self._drained.wait()

    def _on_event(self, event: ev.Event) -> None:
        if isinstance(event, ev.Inbox):
            self._on_inbox(event)
        elif isinstance(event, ev.AgentStart | ev.AgentEnd):
            self.status = "running" if isinstance(event, ev.AgentStart) else "idle"
            self._broadcast(self._status_update())
            if isinstance(event, ev.AgentEnd):
                self._broadcast_usage()
        elif isinstance(event, ev.MessageEnd) and isinstance(event.message, AssistantMessage):
            self._context_tokens = _context_tokens((event.message,))
            self._broadcast_usage()
        for update in self._mapper.updates(event):
            self._broadcast(update)
        inner = event.event if isinstance(event, ev.ChildEvent) else event
        if isinstance(inner, ev.ApprovalRequest):
            approval = _Approval(inner, self._mapper.call_id(event, inner.call.id))
            self._approvals[approval.call_id] = approval
            for peer in list(self.peers):
                self._nursery.start_soon(self._offer, approval, peer)
        elif isinstance(inner, ev.ToolExecutionEnd):
            self._settle(self._mapper.call_id(event, inner.tool_call_id))
        elif isinstance(inner, ev.AgentEnd):
            for call_id in [c for c, a in self._approvals.items() if a.event.agent_id == inner.agent_id]:
                self._settle(call_id)
            if inner is event:
                for prompt in self._claimed:
                    prompt.stop_reason, prompt.error = inner.stop_reason, inner.error
                    prompt.done.set()
                self._claimed.clear()

    def _on_inbox(self, event: ev.Inbox) -> None:
        self._broadcast(self._status_update())
        claimed = event.reason == "claim"
        for item in event.removed:
            origin = self._origins.pop(item.id, None)
            prompt = self._prompts.get(item.id)
            if claimed:
                # The input becomes part of the transcript: show it to the other clients.
                for update in user_updates(item.message):
                    self._broadcast(update, skip=origin)
                if prompt is not None:
                    self._claimed.append(prompt)
            elif prompt is not None:
                prompt.done.set()  # discarded before any turn took it: cancelled

    # -- approvals --------------------------------------------------------------

    def _settle(self, call_id: str) -> None:
        if (approval := self._approvals.pop(call_id, None)) is not None:
            approval.settle()

    async def _offer(self, approval: _Approval, peer: Peer) -> None:
        request = {
            "sessionId": self.id,
            "toolCall": self._mapper.permission_request(approval.event, approval.call_id),
            "options": PERMISSION_OPTIONS,
        }
        if approval.settled:
            return
        with trio.CancelScope() as scope:
            approval.offers.append(scope)
            try:
                response = await peer.request("session/request_permission", request)
            except (PeerGone, RpcError) as exc:
                log.info("session %s: a client did not answer a permission request: %s", self.id, exc)
                return
            finally:
                approval.offers.remove(scope)
        if approval.settled:
            return
        self._settle(approval.call_id)  # the first answer wins
        await self._answer(approval, response)

    async def _answer(self, approval: _Approval, response: Any) -> None:
        kind, malformed = permission_kind(response)
        event = approval.event
        if malformed:
            log.error(
                "session %s: a client answered the permission request for %s with %s; the call does not run",
                self.id,
                approval.call_id,
                malformed,
            )
        if kind.endswith("_always"):
            self.choices.always[event.tool_name] = "allow" if kind.startswith("allow") else "deny"
        agent = self.agent.runtime.registry.get(event.agent_id)
        if agent is None:
            return
        decision = "approve" if kind.startswith("allow") else "deny"
        reason: str | None
        if malformed:
            reason = f"the editor's answer to the permission request was not understood ({malformed})"
        elif kind == "cancelled":
            reason = "the permission request was cancelled"
        else:
            reason = None if decision == "approve" else "the user rejected this tool call"
        try:
            await agent.answer(event.request_id, decision, reason)
        except (LookupError, ValueError):
            pass  # settled meanwhile (a cancel, another client)


def permission_kind(response: Any) -> tuple[str, str | None]:
    """The kind of option a ``session/request_permission`` answer chose
    (``allow_once`` ...; ``cancelled`` when the client cancelled it), and
    what was wrong with an answer that is not ACP's (then ``reject_once``)."""
    outcome = response.get("outcome") if isinstance(response, dict) else None
    if not isinstance(outcome, dict):
        return "reject_once", f"no outcome object in {encode(response)[:200]}"
    if outcome.get("outcome") == "cancelled":
        return "cancelled", None
    option = outcome.get("optionId")
    kinds = {o["optionId"]: o["kind"] for o in PERMISSION_OPTIONS}
    if outcome.get("outcome") != "selected" or option not in kinds:
        return "reject_once", f"an outcome that selects none of the options offered: {encode(outcome)[:200]}"
    return kinds[option], None


def prompt_content(prompt: Any) -> str | list[Text | Image]:
    """The content of an ACP prompt's user message: its text blocks and
    embedded text resources, joined, then its images (checked as ``Image``
    checks them; one that is not a valid image is refused)."""
    if not isinstance(prompt, list):
        raise RpcError(INVALID_PARAMS, "prompt must be a list of content blocks")
    parts: list[str] = []
    images: list[Text | Image] = []
    for block in prompt:
        if not isinstance(block, dict):
            raise RpcError(INVALID_PARAMS, "a content block is an object")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "resource" and isinstance(resource := block.get("resource"), dict):
            if isinstance(resource.get("text"), str):
                parts.append(f"<file uri={resource.get('uri', '')!r}>\n{resource['text']}\n</file>")
        elif block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
            parts.append(f"[{block.get('name') or block['uri']}]({block['uri']})")
        elif block.get("type") == "image":
            images.append(_image(block))
        else:
            raise RpcError(INVALID_PARAMS, f"unsupported content block type {block.get('type')!r}")
    if not parts and not images:
        raise RpcError(INVALID_PARAMS, "the prompt has no text and no image")
    text = "\n\n".join(parts)
    if not images:
        return text
    return [Text(text), *images] if text else images


def _image(block: dict[str, Any]) -> Image:
    """An ACP ``image`` block (base64 ``data``, ``mimeType``) as an ``Image``."""
    data, media_type = block.get("data"), block.get("mimeType")
    if not isinstance(data, str) or not isinstance(media_type, str):
        raise RpcError(INVALID_PARAMS, "an image block needs its base64 data and its mimeType as strings")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raise RpcError(INVALID_PARAMS, "an image block's data is not base64") from None
    try:
        return Image(raw, media_type)
    except (TypeError, ValueError) as exc:
        raise RpcError(INVALID_PARAMS, f"the image is refused: {exc}") from None


class SessionHub:
    """The gateway's sessions: at most one live agent per session id, in one
    Runtime; pumps and approval requests run in the hub's nursery. Sessions
    stay live while the gateway runs, whoever is attached."""

    def __init__(
        self,
        runtime: Runtime,
        spec_for: SpecFactory,
        nursery: trio.Nursery,
        default_cwd: Path | None = None,
        *,
        route_files: bool = False,
        root: Path | None = None,
        sandbox: Sandbox | None = None,
        model_for: ModelFactory | None = None,
    ) -> None:
        self.runtime = runtime
        #: Makes a model from its name, for a session to switch to (None: models are fixed).
        self.model_for = model_for
        #: Where the MCP servers a client names run (None: unconfined).
        self.sandbox = sandbox
        #: The folder every folder a client names must be in (None: any).
        self.root = root.resolve() if root is not None else None
        #: Whether the spec's read/write/edit are agentrio's built-ins, which
        #: then go through a client that offers its files (see ``files``).
        self.route_files = route_files
        #: The workspace of a session whose client names none (the console).
        self.default_cwd = (default_cwd or Path.cwd()).resolve()
        self._spec_for = spec_for
        self.nursery = nursery
        self.sessions: dict[str, Session] = {}
        #: The titles of stored sessions listed so far, read once each.
        self._titles: dict[str, str | None] = {}
        self._lock = trio.Lock()
        #: Sessions another process holds, served from the journal (None: the
        #: store cannot; such a session is then read-only history).
        self.remote: RemoteSessions | None = None

    async def new(
        self, cwd: Path, mcp_servers: Sequence[dict[str, Any]] = (), asker: Peer | None = None
    ) -> Session:
        """A new session in ``cwd``; its ``mcp_servers`` start only if the
        permission policy allows them, or ``asker`` does when it asks."""
        session_id = f"session_{uuid.uuid4().hex[:12]}"
        spec = self._spec_for(cwd)
        servers = await self._allowed_servers(session_id, spec, mcp_servers, asker)
        async with self._lock:
            return await self._start(session_id, cwd, spec, servers)

    async def load(
        self,
        session_id: str,
        cwd: Path,
        mcp_servers: Sequence[dict[str, Any]] = (),
        asker: Peer | None = None,
    ) -> Session | RemoteSession:
        """The live session ``session_id``, or restored from the store (with
        ``mcp_servers`` allowed as for ``new``); one that another process
        holds is served from its journal, where the store allows it (see
        ``remote``)."""
        async with self._lock:
            if (session := self.sessions.get(session_id)) is not None:
                return session
            try:
                await self.runtime.store.load_session(session_id)
            except SessionNotFound:
                raise RpcError(RESOURCE_NOT_FOUND, f"no session {session_id!r}") from None
            spec = self._spec_for(cwd)
            servers = await self._allowed_servers(session_id, spec, mcp_servers, asker)
            try:
                return await self._start(session_id, cwd, spec, servers)
            except RpcError as exc:
                if exc.code != SESSION_HELD or self.remote is None:
                    raise
                return self.remote.open(session_id, cwd)

    async def fork(
        self,
        session_id: str,
        cwd: Path,
        mcp_servers: Sequence[dict[str, Any]] = (),
        asker: Peer | None = None,
        at_message: int | None = None,
    ) -> Session:
        """A new live session whose history is a copy of ``session_id``'s
        (its first ``at_message`` messages, or all), working in ``cwd``.
        Refused while the source is in the middle of a turn."""
        source = self.sessions.get(session_id)
        if source is not None and (source.status == "running" or source.agent.pending_input):
            raise RpcError(BUSY, f"session {session_id!r} is running: fork it between turns")
        fork_id = f"session_{uuid.uuid4().hex[:12]}"
        spec = self._spec_for(cwd)
        servers = await self._allowed_servers(fork_id, spec, mcp_servers, asker)
        async with self._lock:
            try:
                if at_message is None:
                    at_message = len(
                        source.agent.messages
                        if source is not None
                        else (await self.runtime.store.load_state(session_id)).state.messages
                    )
                await fork_session(self.runtime.store, session_id, at_message=at_message, fork_id=fork_id)
            except SessionNotFound:
                raise RpcError(RESOURCE_NOT_FOUND, f"no session {session_id!r}") from None
            except (ForkRefused, ValueError) as exc:
                raise RpcError(INVALID_PARAMS, f"cannot fork there: {exc}") from None
            return await self._start(fork_id, cwd, spec, servers)

    async def close(self, session: Session, peer: Peer) -> None:
        """``peer`` is done with ``session``: detach it, and when no other
        client is attached, cancel its turn and dispose of its agent (its
        journal stays: ``load`` brings it back)."""
        session.detach(peer)
        if session.peers:
            return
        async with self._lock:
            if self.sessions.get(session.id) is session:
                del self.sessions[session.id]
                await self.runtime.dispose(session.agent)

    async def _allowed_servers(
        self, session_id: str, spec: AgentSpec, mcp_servers: Sequence[dict[str, Any]], asker: Peer | None
    ) -> list[_Server]:
        """The servers a client named, each allowed by the session's policy
        as a call with side effects: run under ``allow``, asked of ``asker``
        under ``ask``, refused under ``read-only``. One refused refuses all."""
        servers = [_stdio_server(s) for s in mcp_servers]
        for name, command, args, _ in servers:
            call = ToolCall(
                f"mcp-server-{name}", START_SERVER.name, {"name": name, "command": command, "args": args}
            )
            decision = (
                "allow" if spec.permission is None else await decide(spec.permission, call, START_SERVER)
            )
            reason = getattr(decision, "reason", None) or "the permission policy refuses it"
            if decision == "ask":
                decision, reason = await _ask_to_start(asker, session_id, call)
            if decision != "allow":
                raise RpcError(REFUSED, f"the MCP server {name!r} was not started: {reason}")
        return servers

    def workspace(self, given: str) -> Path:
        """The folder a client named for a session (``default_cwd`` if it
        named none): an existing directory, within ``root`` if there is one
        (a relative name is taken from ``root``)."""
        if not given:
            return self.default_cwd
        if "\0" in given:
            raise RpcError(INVALID_PARAMS, "cwd is not a path: it holds a NUL character")
        path = Path(given)
        if self.root is not None:
            path = (self.root / path).resolve()
            if not path.is_relative_to(self.root):
                raise RpcError(
                    INVALID_PARAMS, f"cwd {given!r} is outside the folder this server serves, {self.root}"
                )
        if not path.is_dir():
            raise RpcError(INVALID_PARAMS, f"cwd {given!r} is not a directory")
        return path

    async def delete(self, session_id: str) -> None:
        """Remove ``session_id`` and its journal: refused while one of its
        turns runs (``BUSY``) or another process holds it; a live idle
        session is disposed first."""
        async with self._lock:
            if (session := self.sessions.get(session_id)) is not None:
                if session.status == "running" or session.agent.pending_input:
                    raise RpcError(BUSY, f"session {session_id!r} is running: cancel it first")
                await self.runtime.dispose(session.agent)
                del self.sessions[session_id]
            try:
                await self.runtime.store.delete_session(session_id)
            except SessionNotFound:
                raise RpcError(RESOURCE_NOT_FOUND, f"no session {session_id!r}") from None
            except SessionHeld as exc:
                raise RpcError(SESSION_HELD, str(exc), {"sessionId": session_id}) from None

    async def history(self, session_id: str, cwd: Path) -> Iterator[dict[str, Any]]:
        """The stored history of ``session_id`` as ``session/update``
        notifications, made as they are taken: to read a session another
        process holds."""
        loaded = await self.runtime.store.load_state(session_id)
        updates = history_updates(tuple(loaded.state.messages), ToolCallView(cwd))
        return (
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": u}}
            for u in updates
        )

    def get(self, session_id: Any) -> Session:
        if not isinstance(session_id, str) or (session := self.sessions.get(session_id)) is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"no live session {session_id!r}: create or load it first")
        return session

    async def listing(self) -> list[dict[str, Any]]:
        summaries = await self.runtime.store.list_summaries()
        children = Counter(s.info.spawned_by for s in summaries if s.info.spawned_by is not None)
        listed = []
        for summary in sorted(summaries, key=lambda s: -s.updated_at):
            session_id = summary.info.session_id
            if summary.info.spawned_by is not None:
                continue  # a child agent's session: its updates come within its parent's
            live = self.sessions.get(session_id)
            meta = {
                "agent": summary.info.agent_name,
                "messages": summary.messages,
                "children": children[session_id],
                "status": live.status if live else "stored",
            }
            info: dict[str, Any] = {
                "sessionId": session_id,
                "cwd": str(live.cwd if live else self.default_cwd),
                "updatedAt": _iso(summary.updated_at),
                "_meta": {"agentrio": meta},
            }
            if live is not None:
                title = live.agent.title or _title(live.agent.messages)
            else:
                title = await self._stored_title(session_id)
            if title:
                info["title"] = title
            listed.append(info)
        return listed

    async def _stored_title(self, session_id: str) -> str | None:
        """A stored session's title, read from its journal the first time it
        is listed (renames through this hub keep it current)."""
        if session_id not in self._titles:
            try:
                state = (await self.runtime.store.load_state(session_id)).state
            except (SessionNotFound, StoreCorrupt, JournalCorrupt):
                return None
            self._titles[session_id] = state.title or _title(tuple(state.messages))
        return self._titles[session_id]

    async def rename(self, session_id: str, title: str) -> str:
        """Give ``session_id`` the title ``title`` (whitespace collapsed), as a
        ``session_renamed`` record in its journal, live or stored; the
        clients attached to it are told. Refused when another process holds
        it. Returns the title as kept."""
        title = " ".join(title.split())
        if not title:
            raise RpcError(INVALID_PARAMS, "title must hold some text")
        if len(title) > MAX_TITLE:
            raise RpcError(
                INVALID_PARAMS, f"title is at most {MAX_TITLE} characters, this one has {len(title)}"
            )
        async with self._lock:
            if (session := self.sessions.get(session_id)) is not None:
                await session.agent.rename(title)
                session.announce_title(title)
            else:
                await self._rename_stored(session_id, title)
                self._titles[session_id] = title
        return title

    async def _rename_stored(self, session_id: str, title: str) -> None:
        store = self.runtime.store
        try:
            await store.claim_session(session_id)
        except SessionHeld as exc:
            raise RpcError(SESSION_HELD, str(exc), {"sessionId": session_id}) from None
        try:
            await store.load_session(session_id)  # it must exist
            await store.append(session_id, [SessionRenamed(title)])
            await store.sync(session_id)
        except SessionNotFound:
            raise RpcError(RESOURCE_NOT_FOUND, f"no session {session_id!r}") from None
        finally:
            with trio.CancelScope(shield=True):
                await store.release_session(session_id)

    async def _start(self, session_id: str, cwd: Path, spec: AgentSpec, servers: list[_Server]) -> Session:
        choices = RememberedChoices(spec.permission, cwd if self.route_files else None)
        files = ClientFiles(session_id)
        terminals = ClientTerminals(session_id)
        tools = spec.tools
        if self.route_files:
            tools = tuple(through_client(t, files, cwd) if t.name in FILE_TOOLS else t for t in tools)
            if uses_client_terminals(self.sandbox):
                tools = tuple(through_terminal(t, terminals, cwd) if t.name == "bash" else t for t in tools)
        spec = attrs.evolve(spec, permission=choices, tools=tools)

        async def setup(agent: Agent, scope: AgentScope) -> None:
            if servers:
                from ...tools.mcp import mcp_server  # the optional `mcp` extra

                for name, command, args, env in servers:
                    server = await scope.enter_async_context(
                        mcp_server(
                            command,
                            args,
                            name=name,
                            env=env,
                            cwd=cwd,
                            prefix=f"{name}_",
                            sandbox=self.sandbox,
                        )
                    )
                    agent.tools.update(server.tools_by_name())

        try:
            agent = await self.runtime.create(spec, session_id=session_id, setup=setup if servers else None)
        except ImportError as exc:
            raise RpcError(INVALID_PARAMS, f"MCP servers need agentrio's `mcp` extra: {exc}") from None
        except SessionHeld as exc:
            holder = getattr(exc, "holder", None)
            data = {"sessionId": session_id, "holder": None if holder is None else str(holder)}
            raise RpcError(SESSION_HELD, str(exc), data) from None
        except Exception as exc:
            log.exception("starting a session failed")
            raise RpcError(INTERNAL_ERROR, f"could not start the session: {exc}") from None
        sandboxed = None
        if self.route_files:

            def make(sandbox: Sandbox | None) -> list[Tool]:
                made = coding_tools(cwd, sandbox=sandbox)
                return [through_client(t, files, cwd) if t.name in FILE_TOOLS else t for t in made]

            sandboxed = SandboxedTools(self.sandbox, make)
        session = Session(agent, cwd, choices, files, self.nursery, terminals, self.model_for, sandboxed)
        await self.nursery.start(session.pump)
        self.sessions[agent.session_id] = session
        # Prompts queued when the last process ended run once a client sees them queued.
        session.resume_pending = bool(agent.pending_input)
        return session


#: A client's MCP server: name, command, arguments, environment.
_Server = tuple[str, str, list[str], dict[str, str]]


async def _not_run(args: dict[str, Any], ctx: Any) -> Any:
    raise RuntimeError("START_SERVER only describes a server's start to the permission policy")


#: How the permission policy sees a client's MCP server: a call with side
#: effects (it runs a command of the client's choosing).
START_SERVER = Tool(
    "start_mcp_server",
    "Runs the command of an MCP server a client named for its session.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "command": {"type": "string"},
            "args": {"type": "array", "items": {"type": "string"}},
        },
    },
    _not_run,
    execution_mode="exclusive",
)


async def _ask_to_start(asker: Peer | None, session_id: str, call: ToolCall) -> tuple[str, str]:
    """Ask the client that named a server whether to start it: (decision, reason)."""
    if asker is None:
        return "deny", "nobody could be asked"
    command = shlex.join([call.arguments["command"], *call.arguments["args"]])
    request = {
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": call.id,
            "title": f"start the MCP server {call.arguments['name']}: {command}",
            "kind": "execute",
            "status": "pending",
            "rawInput": call.arguments,
        },
        "options": [o for o in PERMISSION_OPTIONS if o["kind"].endswith("_once")],
    }
    try:
        response = await asker.request("session/request_permission", request)
    except (PeerGone, RpcError) as exc:
        return "deny", f"the client did not answer: {exc}"
    outcome = response.get("outcome") if isinstance(response, dict) else None
    if isinstance(outcome, dict) and outcome.get("optionId") == "allow-once":
        return "allow", ""
    return "deny", "the user rejected it"


def _stdio_server(server: Any) -> _Server:
    if not isinstance(server, dict) or server.get("type", "stdio") != "stdio":
        raise RpcError(INVALID_PARAMS, "only stdio MCP servers are supported")
    name, command, args = server.get("name"), server.get("command"), server.get("args", [])
    if not isinstance(name, str) or not isinstance(command, str) or not isinstance(args, list):
        raise RpcError(INVALID_PARAMS, "an MCP server needs a name, a command and args")
    env = server.get("env", [])
    if not isinstance(env, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("value"), str)
        for e in env
    ):
        raise RpcError(INVALID_PARAMS, "an MCP server's env is a list of {name, value} strings")
    env = {e["name"]: e["value"] for e in env}
    return name, command, [str(a) for a in args], env
