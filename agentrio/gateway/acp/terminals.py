"""The built-in ``bash`` in the client's terminals (ACP ``terminal/*``).

When a client attached to a session advertised ``clientCapabilities.terminal``,
``bash`` runs each command in a terminal the client makes
(``terminal/create``), so the editor shows it live: the call's content
embeds the terminal (``{"type": "terminal", "terminalId": ...}``) from the
moment it starts. The rest is as when it runs here:

- order: the terminal is asked for only once the editor has been sent the
  call's ``tool_call`` and ``in_progress``, so it always has a call to
  embed the terminal in;
- permission: the call is decided by the session's policy (and asked of
  the person) before it runs, as any call;
- time limit: past the call's ``timeout`` the agent asks ``terminal/kill``,
  then reads what it printed; the result says it timed out;
- cancel: ``terminal/kill`` then ``terminal/release`` before the
  cancellation goes on; every terminal is released once its call ends,
  however it ends, and a cancel that comes while the terminal is being
  made waits for its id to release it. Each request but
  ``terminal/wait_for_exit`` is given at most ``CLEANUP_TIMEOUT`` seconds:
  a client that does not answer cannot hold the call;
- output: ``outputByteLimit`` keeps what the model reads bounded; stdout
  and stderr come mixed, as the terminal shows them.

What the agent cannot enforce there it does not pretend to: the client's
process runs with the client's rights, so no sandbox applies to it, and
whether ``terminal/kill`` stops every process the command started is the
client's affair. That is why a session whose tools run in a sandbox
(``read-only`` or ``workspace-write``) never hands its commands to the
client: ``bash`` then runs here, confined, as without terminals; only with
the sandbox ``off`` (or none available) do commands go to the client.

A client that refuses ``terminal/create`` (an error answer) refuses the
command: the call fails with the client's message and nothing runs here.
A client that leaves before the terminal is made leaves the command to run
here; one that leaves while it runs ends the call with an error.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from ...tools import Tool, ToolContext, ToolResult
from ...tools.builtin.shell import DEFAULT_TIMEOUT, MAX_TIMEOUT, OUTPUT_CAP, command_result
from ...tools.builtin.workspace import Workspace
from ...tools.process import ProcessResult
from ...tools.sandbox import Sandbox
from ...tools.tool import ToolOutput
from .files import ClientOffers
from .jsonrpc import INTERNAL_ERROR, Peer, PeerGone, RpcError

log = logging.getLogger("agentrio.gateway")

#: The most a command's output may hold (bytes; the client keeps the end).
OUTPUT_BYTES = 2 * OUTPUT_CAP
#: How long killing and releasing a terminal may take, each, when a call ends.
CLEANUP_TIMEOUT = 5.0
#: The progress a call reports when its terminal exists (see ``terminal_content``).
TERMINAL = "acpTerminal"


class ClientTerminals(ClientOffers):
    """Which client, if any, runs a session's commands: one that offered terminals.

    ``announced`` returns once the session's updates so far are queued for
    its clients (the session sets it to its pump's catching up): a call's
    ``terminal/create`` waits for it, so that the editor has the call's
    ``tool_call`` and ``in_progress`` before the terminal to embed in it.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.announced: Callable[[], Awaitable[None]] = trio.lowlevel.checkpoint


def uses_client_terminals(sandbox: Sandbox | None) -> bool:
    """Whether commands may go to a client's terminals: only when no
    sandbox confines them here (see the module's documentation)."""
    return sandbox is None or sandbox.mode == "off"


def terminal_content(progress: Any) -> dict[str, Any] | None:
    """The ACP content that embeds a terminal, for the progress a call
    reports once the client made it; None for any other progress."""
    if isinstance(progress, dict) and set(progress) == {TERMINAL} and isinstance(progress[TERMINAL], str):
        return {"type": "terminal", "terminalId": progress[TERMINAL]}
    return None


def through_terminal(tool: Tool, terminals: ClientTerminals, cwd: Path) -> Tool:
    """The built-in ``bash`` ``tool``, its commands run in a client's
    terminal while a client that offers terminals is attached."""
    root = Workspace.of(cwd).root

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        peer = terminals.peer()
        if peer is None:
            return await tool.execute(args, ctx)
        ids = {"sessionId": terminals.session_id}
        command = args["command"]
        await terminals.announced()
        create = {**ids, "command": "bash", "args": ["-c", command], "cwd": str(root)}
        try:
            # Shielded: a cancel that came meanwhile still learns the
            # terminal's id, so that it is killed and released, not leaked.
            with trio.CancelScope(shield=True):
                created = await _ask(peer, "terminal/create", {**create, "outputByteLimit": OUTPUT_BYTES})
        except PeerGone:
            return await tool.execute(args, ctx)  # the client left first: run it here
        except RpcError as exc:
            return ToolResult(f"the editor could not run the command: {exc.message}", is_error=True)
        terminal_id = created.get("terminalId") if isinstance(created, dict) else None
        if not isinstance(terminal_id, str):
            return ToolResult("the editor answered terminal/create without a terminalId", is_error=True)
        terminal = _Terminal(peer, {**ids, "terminalId": terminal_id})
        ctx.report({TERMINAL: terminal_id})
        timeout = min(args.get("timeout", DEFAULT_TIMEOUT), MAX_TIMEOUT)
        try:
            return command_result(await terminal.run(command, timeout))
        except PeerGone:
            return ToolResult("the editor went away while the command ran", is_error=True)
        except RpcError as exc:
            return ToolResult(f"the editor's terminal failed: {exc.message}", is_error=True)
        finally:
            with trio.CancelScope(shield=True):
                await terminal.release()

    return attrs.evolve(tool, execute=execute)


@attrs.define
class _Terminal:
    """One terminal of the client, from its creation to its release."""

    peer: Peer
    ids: dict[str, str]
    running: bool = True

    async def run(self, command: str, timeout: float) -> ProcessResult:
        """Wait for the command's end, killing it at ``timeout``; how it ended."""
        await trio.lowlevel.checkpoint_if_cancelled()  # cancelled while it was made: wait for nothing
        start = trio.current_time()
        with trio.move_on_after(timeout) as limit:
            await self.peer.request("terminal/wait_for_exit", self.ids)
            self.running = False
        if limit.cancelled_caught:
            await self.kill()
        output = await self._ask("terminal/output")
        if not isinstance(output, dict) or not isinstance(output.get("output"), str):
            raise RpcError(INTERNAL_ERROR, "terminal/output answered without output")
        status: dict[str, Any] = output.get("exitStatus") or {}
        if not isinstance(status, dict):
            raise RpcError(INTERNAL_ERROR, "terminal/output answered an exitStatus that is not an object")
        code = status.get("exitCode")
        return ProcessResult(
            command=("bash", "-c", command),
            exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            signal=_signal(status.get("signal")),
            stdout=output["output"],
            stderr="",
            timed_out=limit.cancelled_caught,
            truncated=output.get("truncated") is True,
            duration=trio.current_time() - start,
        )

    async def kill(self) -> None:
        self.running = False
        await self._ask("terminal/kill")

    async def release(self) -> None:
        """Kill the command if it still runs, then release the terminal; a
        step that fails is logged."""
        for method in ["terminal/kill"] * self.running + ["terminal/release"]:
            try:
                await self._ask(method)
            except (PeerGone, RpcError) as exc:
                log.info("terminal %s: %s failed: %s", self.ids["terminalId"], method, exc)

    async def _ask(self, method: str) -> Any:
        return await _ask(self.peer, method, self.ids)


async def _ask(peer: Peer, method: str, params: dict[str, Any]) -> Any:
    """The client's answer to ``method``, within ``CLEANUP_TIMEOUT``."""
    with trio.move_on_after(CLEANUP_TIMEOUT):
        return await peer.request(method, params)
    raise RpcError(INTERNAL_ERROR, f"the editor did not answer {method} within {CLEANUP_TIMEOUT:g} s")


def _signal(name: Any) -> int | None:
    """A signal's number from its name as a client gives it (``SIGKILL``, ``KILL``, ``9``)."""
    if not isinstance(name, str) or not name:
        return None
    try:
        if name.isdigit():
            return signal.Signals(int(name)).value
        return signal.Signals["SIG" + name.upper().removeprefix("SIG")].value
    except (KeyError, ValueError):
        return None
