"""MCP tool servers as agentrio tools (the optional extra ``agentrio[mcp]``).

``mcp_server(command, args)`` starts an MCP server over stdio with the
official SDK (whose anyio core runs under trio), lists its tools and offers
them as agentrio ``Tool``s::

    async with mcp_server(sys.executable, ["-m", "mcp_server_time"], name="time") as server:
        spec = AgentSpec("assistant", model, tools=server.tools)

The block owns a nursery, so it nests like one: entered and left in the same
task, around everything opened inside it. To give an agent a server for its
whole life, enter it in the agent's scope: it closes when the agent is torn
down::

    async def setup(agent, scope):
        server = await scope.enter_async_context(
            mcp_server(sys.executable, ["-m", "mcp_server_time"], name="time")
        )
        agent.tools.update(server.tools_by_name())

    agent = await rt.create(spec, setup=setup)

The connection is the one child of a ``Supervisor``: when the server process
dies it is started again (at most ``max_restarts`` times within ``within``
seconds). A call in flight when it died gets an error result, since whether
it took effect is unknown; a call made while the server restarts waits for
it. Progress the server reports during a call is the call's progress
(``tool_execution_update`` events). When the supervisor gives up, the bridge
stays open and every call gets an error result saying why: a broken tool
server fails its tools, never the agent that holds them. The server runs
under the same supervising shim as subprocess tools: leaving the block
closes the server's stdin, and when the server exits, or has not within
2 s (the SDK then sends TERM), every process it started, in whatever group
or session, gets TERM, then KILL a second later.

Names: a listed name that model providers would refuse (``files.read``,
``fs/list``, over 64 characters) is offered with each refused character
as ``_``, cut to fit and given a short hash of the original when it is too
long or would clash with another tool's; calls reach the server under the
name it listed. A tool listed with a parameter schema that is no JSON Schema
is left out (``server.refused`` says why); the others are offered.

Execution mode: a tool runs ``parallel`` only when the server marks it
read-only (``readOnlyHint: true``); otherwise ``exclusive``, since MCP
presumes a tool without that hint may change its environment. Pass
``execution_mode`` to decide for every tool of a server.

Cancel means stopped: a call cancelled by its caller (the agent's run
aborted), or past ``call_timeout``, sends the server MCP's cancellation
notification before it ends. When the server says its tool list changed,
the tools are listed again: ``server.tools`` is the new listing, and each
mapping given to ``server.offer(...)`` is kept up to date.

``mcp_server(url=..., headers=...)`` reaches a remote server over streamable
HTTP instead (``agentrio.tools.mcp_http``), with the same supervision.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Self, TextIO, TypeVar, cast

import attrs
import trio

try:
    import mcp.types as mcp_types
    from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
except ModuleNotFoundError as missing:
    raise ModuleNotFoundError(
        "agentrio.tools.mcp needs the MCP SDK: pip install 'agentrio[mcp]'", name=missing.name
    ) from missing

from .. import tracing
from ..supervision import ChildSpec, OnEvent, Supervisor, SupervisorEscalation
from .mcp_results import tool_result
from .process import supervised
from .sandbox import TEMP_VARIABLES, Sandbox
from .tool import TOOL_NAME, ExecutionMode, Tool, ToolContext, ToolResult

T = TypeVar("T")
log = logging.getLogger(__name__)
#: Seconds a server's processes have between TERM and KILL once it is
#: stopped; below the SDK's own wait, so that the shim, not the SDK, stops
#: the whole tree.
STOP_GRACE = 1.0


class ServerExited(Exception):
    """The server process went away (its output ended)."""


class ServerDidNotStart(Exception):
    """The server did not answer the MCP handshake, or its tool listing."""


@attrs.frozen
class Transport:
    """How a ``ToolServer`` reaches its server: ``open()`` is entered for each
    run of the connection and gives the SDK's (read, write) streams."""

    open: Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]]
    #: What a call that was in flight when the connection ended is told.
    lost: str
    #: How the connection's end is reported (``ServerExited``, restart events).
    ended: str = "exited"
    #: Whether a call's error says the request never reached a server that
    #: runs (an HTTP session the server forgot when it restarted): the call
    #: is then sent again, once, on the next connection.
    undelivered: Callable[[MCPError], bool] = lambda error: False


class ToolServer:
    """A running MCP server and the agentrio tools that call it."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        *,
        prefix: str,
        execution_mode: ExecutionMode | None,
        startup_timeout: float,
        call_timeout: float | None = None,
    ) -> None:
        self.name = name
        self._transport = transport
        self._prefix = prefix
        self._execution_mode = execution_mode
        self._startup_timeout = startup_timeout
        self._call_timeout = call_timeout
        self._tools: tuple[Tool, ...] = ()
        self._refused: dict[str, str] = {}
        #: Mappings given to ``offer``, kept up to date with the listing.
        self._offered_to: list[MutableMapping[str, Tool]] = []
        #: Set by the server's ``tools/list_changed`` notification.
        self._listing_changed = trio.Event()
        #: The session with the running server, and the watch on its output.
        self._connection: tuple[ClientSession, _EndWatch] | None = None
        #: Why calls cannot be served any more; None while the server runs or restarts.
        self._unavailable: str | None = None
        self._changed = trio.Event()

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The server's tools, as it listed them when it first started, or
        last said its list changed."""
        return self._tools

    def tools_by_name(self) -> dict[str, Tool]:
        return {t.name: t for t in self._tools}

    def offer(self, tools: MutableMapping[str, Tool]) -> None:
        """Put the server's tools in ``tools`` (an agent's ``agent.tools``,
        say) and keep them there as the server's list changes: a tool it
        drops is taken out, a new one put in."""
        tools.update(self.tools_by_name())
        self._offered_to.append(tools)

    @property
    def refused(self) -> Mapping[str, str]:
        """Tools the server listed but that could not be offered (a parameter
        schema that is no JSON Schema, say), by listed name, with why. The
        server's other tools are offered all the same."""
        return self._refused

    # -- calls ----------------------------------------------------------------

    async def _call(self, tool_name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        async def report(progress: float, total: float | None, message: str | None) -> None:
            ctx.report({"progress": progress, "total": total, "message": message})

        for attempt in range(2):
            connection = await self._live_connection()
            if connection is None:
                return ToolResult(
                    f"MCP server {self.name!r} is unavailable: {self._unavailable}", is_error=True
                )
            session, watched = connection
            try:
                result = await session.call_tool(
                    tool_name,
                    args,
                    read_timeout_seconds=self._call_timeout,
                    progress_callback=report,
                    meta=cast(
                        "mcp_types.RequestParamsMeta | None", tracing.request_meta()
                    ),  # (a dict is one)
                )
            except MCPError as exc:
                if exc.code == mcp_types.CONNECTION_CLOSED:
                    watched.ended.set()  # a transport may stay open with nothing behind it
                    return ToolResult(f"MCP server {self.name!r} {self._transport.lost}", is_error=True)
                if exc.code == mcp_types.REQUEST_TIMEOUT:
                    return ToolResult(
                        f"MCP server {self.name!r} did not answer {tool_name!r} within {self._call_timeout:g} s; "
                        "the call was cancelled",
                        is_error=True,
                    )
                if attempt == 0 and self._transport.undelivered(exc):
                    watched.ended.set()
                    continue
                return ToolResult(f"MCP server {self.name!r} refused the call: {exc.message}", is_error=True)
            return tool_result(result)
        raise AssertionError("unreachable: the second attempt returns")

    async def _live_connection(self) -> tuple[ClientSession, _EndWatch] | None:
        """The session with the running server: waits while it restarts;
        None once it is not coming back."""
        while self._unavailable is None:
            # The output may have ended before the connection's task heard of it.
            if self._connection is not None and not self._connection[1].ended.is_set():
                return self._connection
            await self._changed.wait()
        return None

    def _set(
        self, connection: tuple[ClientSession, _EndWatch] | None, unavailable: str | None = None
    ) -> None:
        self._connection, self._unavailable = connection, unavailable
        self._changed.set()
        self._changed = trio.Event()

    # -- the server -----------------------------------------------------------

    async def _supervise(
        self,
        max_restarts: int,
        within: float,
        on_event: OnEvent | None,
        *,
        task_status: trio.TaskStatus[None],
    ) -> None:
        """Keep the server running; once its supervisor gives up, answer
        every call with why."""
        try:
            async with Supervisor(
                max_restarts=max_restarts, within=within, on_event=on_event, name=f"mcp:{self.name}"
            ) as supervisor:
                await supervisor.start_child(ChildSpec(self.name, self._connect))
                task_status.started()
                await trio.sleep_forever()
        except SupervisorEscalation as escalation:
            self._set(None, unavailable=str(escalation))

    async def _connect(self, *, task_status: trio.TaskStatus[None]) -> None:
        """One run of the server: up once it answered the handshake; ends
        (raising ``ServerExited``) when its output ends."""
        async with self._transport.open() as (read, write):
            watched = _EndWatch(read)
            async with ClientSession(watched, write, message_handler=self._on_message) as session:
                # Failing here would leave the SDK's task groups wrapping the
                # error in exception groups: carry it out of them instead.
                failure = await _failure_of(self._start(session))
                if failure is None:
                    self._set((session, watched))
                    task_status.started()
                    try:
                        async with trio.open_nursery() as nursery:
                            nursery.start_soon(self._relist_on_change, session)
                            await watched.ended.wait()
                            nursery.cancel_scope.cancel()
                    finally:
                        self._set(None)
        if failure is not None:
            raise ServerDidNotStart(
                f"MCP server {self.name!r} did not start: {type(failure).__name__}: {failure}"
            ) from failure
        raise ServerExited(f"MCP server {self.name!r} {self._transport.ended}")

    async def _start(self, session: ClientSession) -> None:
        with trio.move_on_after(self._startup_timeout):
            await session.initialize()
            if not self._tools:
                listed = await _list_tools(session)
                names = provider_names([self._prefix + t.name for t in listed])
                self._tools = tuple(self._offered(listed, names))
            return
        raise TimeoutError(f"no answer within {self._startup_timeout:g} s")

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._listing_changed.set()

    async def _relist_on_change(self, session: ClientSession) -> None:
        """List the tools again each time the server says they changed (one
        listing for any number of notices that came meanwhile)."""
        while True:
            await self._listing_changed.wait()
            self._listing_changed = trio.Event()
            listed = await _list_tools(session)
            before = self._tools
            self._refused = {}
            self._tools = tuple(
                self._offered(listed, provider_names([self._prefix + t.name for t in listed]))
            )
            for tools in self._offered_to:
                for tool in before:
                    tools.pop(tool.name, None)
                tools.update(self.tools_by_name())

    def _offered(self, listed: Sequence[mcp_types.Tool], names: Sequence[str]) -> Iterator[Tool]:
        for tool, name in zip(listed, names, strict=True):
            try:
                yield self._tool(tool, name)
            except (TypeError, ValueError) as exc:
                self._refused[tool.name] = str(exc)
                log.warning("MCP server %r: tool %r left out: %s", self.name, tool.name, exc)

    def _tool(self, listed: mcp_types.Tool, name: str) -> Tool:
        return Tool(
            name,
            listed.description or listed.title or "",
            listed.input_schema,
            partial(self._call, listed.name),
            execution_mode=self._execution_mode or _mode_from_annotations(listed.annotations),
        )


def provider_names(names: Sequence[str]) -> list[str]:
    """``names`` as model providers accept tool names, each distinct: a valid
    name is kept; in another, each refused character becomes ``_``, and a
    name cut to fit, or clashing with another, is cut further and ends in
    ``_`` and 8 hex digits of a hash of the original (the same every time
    the server starts)."""
    valid = {name for name in names if TOOL_NAME.fullmatch(name)}
    out: list[str] = []
    for name in names:
        if name in valid and name not in out:
            out.append(name)
            continue
        mapped = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "_"
        clashes = 0
        while mapped in valid or mapped in out or len(name) > 64 and clashes == 0:
            digest = hashlib.sha256(f"{name}\0{clashes}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
            mapped = f"{re.sub(r'[^a-zA-Z0-9_-]', '_', name)[:55]}_{digest}"
            clashes += 1
        out.append(mapped)
    return out


@asynccontextmanager
async def mcp_server(
    command: str | None = None,
    args: Sequence[str] = (),
    *,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    prefix: str = "",
    execution_mode: ExecutionMode | None = None,
    max_restarts: int = 3,
    within: float = 60.0,
    startup_timeout: float = 30.0,
    call_timeout: float | None = None,
    on_event: OnEvent | None = None,
    errlog: TextIO | None = None,
    sandbox: Sandbox | None = None,
) -> AsyncIterator[ToolServer]:
    """Run the MCP server ``command args`` over stdio for the block.

    ``name`` (default: the command's file name) names the server in errors
    and events; ``prefix`` is put before each tool's name, to keep the tools
    of several servers apart. ``env`` is added to the SDK's small default
    environment; the server's stderr goes to ``errlog`` (default
    ``sys.stderr``). Restarts: at most ``max_restarts`` within ``within``
    seconds; ``on_event`` receives the supervisor's events. A server that
    does not answer the handshake within ``startup_timeout`` seconds has
    failed to start. Entering the block raises ``ServerDidNotStart`` (or the
    ``OSError`` of a command that cannot run) if the first start fails. A
    call not answered within ``call_timeout`` seconds (default: no limit) is
    cancelled on the server and answered with an error.

    With ``sandbox`` the server and all it starts run confined, with ``cwd``
    (default: the current directory) as the workspace and a private
    temporary directory that lasts as long as the block; entering raises
    ``SandboxUnavailable`` when this machine cannot enforce it.

    With ``url`` instead of ``command``, the server is reached over
    streamable HTTP (or the older SSE transport), sending ``headers``
    (``Authorization``, say) with every request; see ``mcp_http``.
    """
    if url is not None:
        if command is not None:
            raise TypeError("mcp_server takes a command or a url, not both")
        from .mcp_http import http_server  # it builds on this module

        async with http_server(
            url,
            headers,
            name=name,
            prefix=prefix,
            execution_mode=execution_mode,
            max_restarts=max_restarts,
            within=within,
            startup_timeout=startup_timeout,
            call_timeout=call_timeout,
            on_event=on_event,
        ) as server:
            yield server
        return
    if command is None:
        raise TypeError("mcp_server needs a command to run, or the url of a server")
    executable = shutil.which(command)
    if executable is None:
        raise FileNotFoundError(errno.ENOENT, "no such command, or not executable", command)
    workspace = os.path.realpath(cwd or os.getcwd())
    confinement = None if sandbox is None else sandbox.confine(workspace)
    argv, policy, environment = [executable, *args], None, dict(env or {})
    temp = None
    if confinement is not None:
        temp = confinement.temporary()
        argv, policy = confinement.command(argv, workspace, temp)
        environment.update(dict.fromkeys(TEMP_VARIABLES, temp))
    params = StdioServerParameters(
        command=sys.executable,
        args=supervised(argv, STOP_GRACE, policy=policy)[1:],
        env=environment or None,
        cwd=cwd,
    )
    server = ToolServer(
        name or Path(command).name,
        Transport(
            partial(stdio_client, params, errlog=errlog or sys.stderr),
            lost="exited during the call, so whether the call took effect is unknown; "
            "the server is restarted for later calls",
        ),
        prefix=prefix,
        execution_mode=execution_mode,
        startup_timeout=startup_timeout,
        call_timeout=call_timeout,
    )
    try:
        async with hosted(server, max_restarts, within, on_event):
            yield server
    finally:
        if temp is not None:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(partial(shutil.rmtree, temp, ignore_errors=True))


@asynccontextmanager
async def hosted(
    server: ToolServer, max_restarts: int, within: float, on_event: OnEvent | None
) -> AsyncIterator[ToolServer]:
    """Run ``server``'s connection under its supervisor for the block."""
    try:
        # The server's supervisor runs as a temporary child: when it gives up
        # it ends, and the owner of this block goes on.
        async with Supervisor(name=f"mcp-host:{server.name}") as host:
            await host.start_child(
                ChildSpec(
                    server.name,
                    partial(server._supervise, max_restarts, within, on_event),
                    restart="temporary",
                )
            )
            yield server
    finally:
        server._set(None, unavailable="the server was shut down")


def _mode_from_annotations(annotations: mcp_types.ToolAnnotations | None) -> ExecutionMode:
    read_only = annotations is not None and annotations.read_only_hint is True
    return "parallel" if read_only else "exclusive"


async def _list_tools(session: ClientSession) -> list[mcp_types.Tool]:
    listed: list[mcp_types.Tool] = []
    cursor: str | None = None
    while True:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        listed.extend(page.tools)
        if not (cursor := page.next_cursor):
            return listed


async def _failure_of(pending: Awaitable[Any]) -> Exception | None:
    try:
        await pending
    except Exception as exc:  # noqa: BLE001 - the caller raises it, as the cause of its own error
        return exc
    return None


class _EndWatch:
    """The SDK's read stream from the server, telling when it ends: once the
    server's output ends, or the transport breaks, nothing more can come."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.ended = trio.Event()

    async def receive(self) -> Any:
        return await self._watch(self._stream.receive())

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> Any:
        return await self._watch(self._stream.__anext__())

    async def _watch(self, pending: Awaitable[T]) -> T:
        try:
            return await pending
        except Exception:  # end of stream, or a closed or broken one
            self.ended.set()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
