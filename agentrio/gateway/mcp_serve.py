"""Agents offered as an MCP server (``agentrio.serve_mcp``, ``agentrio mcp``).

Each agent is one tool, named after its spec, taking ``prompt`` and an
optional ``session``. A call runs the agent on the prompt and answers with
its final text, then the session id (``session: ...``, also in the result's
``_meta`` under ``agentrio/session``), which a later call passes as
``session`` to continue that conversation from its journal. A spec with an
``output_type`` also answers with the value as structured content, and the
tool declares the output schema.

While a call runs, the client (when it asked for progress) is told of each
turn and each tool call. A client that cancels the call cancels the run. A
tool call the agent's permission policy asks about is put to the client as
an elicitation when it supports them; otherwise it is refused, and the
model is told why.

One call holds its session: a second call on a session that is running is
refused. The agent of a call is disposed when the call ends, so the session
can be continued by the next one (in this process or, over a shared store,
another).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, cast

import trio

try:
    import mcp.types as mcp_types
    from mcp import MCPError
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext
    from mcp.server.stdio import stdio_server
except ModuleNotFoundError as missing:
    raise ModuleNotFoundError(
        "serving agents over MCP needs: pip install 'agentrio[mcp]'", name=missing.name
    ) from missing

from ..actors import Agent, AgentSpec, RunResult
from ..events import ApprovalRequest, ToolExecutionStart, TurnStart
from ..journal import SessionHeld, Store
from ..supervisors import Runtime

#: Where a result's ``_meta`` carries the session id.
SESSION_META = "agentrio/session"
#: What an elicitation for an approval asks the person for.
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Allow this tool call?"}},
    "required": ["approve"],
}
NO_ELICITATION = (
    "refused: the tool call needs a person's approval, and this MCP client cannot be asked "
    "(it does not support elicitation)"
)


def input_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "What to ask the agent."},
            "session": {
                "type": "string",
                "description": "Continue this session (the id an earlier call answered with); "
                "leave out to start a new one.",
            },
        },
        "required": ["prompt"],
        "additionalProperties": False,
    }


class AgentTools:
    """The handlers of an MCP server whose tools are agents, run on
    ``runtime``. ``server()`` is the SDK's low-level ``Server`` to run over
    any of its transports."""

    def __init__(
        self,
        runtime: Runtime,
        specs: AgentSpec | Sequence[AgentSpec],
        descriptions: Mapping[str, str] | None = None,
    ) -> None:
        specs = [specs] if isinstance(specs, AgentSpec) else list(specs)
        if not specs:
            raise ValueError("serve_mcp needs at least one AgentSpec")
        self._specs: dict[str, AgentSpec] = {}
        for spec in specs:
            if not isinstance(spec, AgentSpec):
                raise TypeError(f"serve_mcp serves AgentSpecs, got {type(spec).__name__}")
            if spec.name in self._specs:
                raise ValueError(f"two agents are named {spec.name!r}: each is a tool, by its name")
            self._specs[spec.name] = spec
        self._runtime = runtime
        self._descriptions = dict(descriptions or {})

    def server(self, name: str = "agentrio") -> Server:
        return Server(name, on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    def tools(self) -> list[mcp_types.Tool]:
        return [
            mcp_types.Tool(
                name=spec.name,
                description=self._descriptions.get(spec.name)
                or f"Ask the agent {spec.name!r}; it answers in text.",
                input_schema=input_schema(),
                output_schema=spec.output_spec.schema if spec.output_spec is not None else None,
            )
            for spec in self._specs.values()
        ]

    async def _list_tools(
        self, ctx: ServerRequestContext, params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=self.tools())

    async def _call_tool(
        self, ctx: ServerRequestContext, params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        spec = self._specs.get(params.name)
        if spec is None:
            raise MCPError(mcp_types.INVALID_PARAMS, f"no agent is called {params.name!r}")
        arguments = params.arguments or {}
        prompt, session = arguments.get("prompt"), arguments.get("session")
        if not isinstance(prompt, str) or not (session is None or isinstance(session, str)):
            return _error("`prompt` must be a string, and `session`, when given, a string")
        try:
            agent = await self._runtime.create(spec, session_id=session or None)
        except (ValueError, SessionHeld) as exc:
            return _error(f"session {session!r} cannot be opened now: {exc}")
        try:
            result = await self._run(ctx, agent, prompt)
        finally:
            # Cancelled by the client or not: the run stops, and the session
            # is free for the next call.
            with trio.CancelScope(shield=True):
                await agent.dispose()
        return _answer(spec, agent.session_id, result)

    async def _run(self, ctx: ServerRequestContext, agent: Agent, prompt: str) -> RunResult:
        steps = 0
        async with trio.open_nursery() as nursery:
            async with agent.stream(prompt) as run:
                async for event in run:
                    match event:
                        case TurnStart(turn=turn):
                            steps += 1
                            await ctx.session.report_progress(steps, None, f"turn {turn}")
                        case ToolExecutionStart(tool_name=tool_name):
                            steps += 1
                            await ctx.session.report_progress(steps, None, f"tool {tool_name}")
                        case ApprovalRequest():
                            nursery.start_soon(self._approve, ctx, agent, event)
            nursery.cancel_scope.cancel()  # approvals no longer awaited
        assert run.result is not None  # the stream ran to the run's end
        return run.result

    async def _approve(self, ctx: ServerRequestContext, agent: Agent, request: ApprovalRequest) -> None:
        """Put ``request`` to the client's person, or refuse it when the
        client cannot be asked."""
        capabilities = ctx.session.client_capabilities
        reason: str | None
        if capabilities is None or capabilities.elicitation is None:
            decision, reason = "deny", NO_ELICITATION
        else:
            message = f"The agent {agent.spec.name!r} wants to run {request.tool_name}: {request.summary}"
            if request.reason:
                message += f"\n({request.reason})"
            try:
                answer = await ctx.session.elicit_form(
                    message, APPROVAL_SCHEMA, related_request_id=ctx.request_id
                )
            except MCPError as exc:
                decision, reason = "deny", f"refused: asking for approval failed: {exc.message}"
            else:
                approved = answer.action == "accept" and (answer.content or {}).get("approve") is True
                decision, reason = (
                    ("approve", None) if approved else ("deny", f"refused by the person ({answer.action})")
                )
        try:
            await agent.answer(request.request_id, decision, reason)
        except (LookupError, ValueError):
            pass  # the run ended, or the request was answered, meanwhile


def _answer(spec: AgentSpec, session_id: str, result: RunResult) -> mcp_types.CallToolResult:
    completed = result.stop_reason == "completed"
    text = (
        result.text
        if completed
        else f"the agent stopped ({result.stop_reason}): {result.error or result.text}"
    )
    structured = None
    if completed and spec.output_spec is not None:
        structured = json.loads(result.text)  # the answer the run checked against the schema
    return mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text=text),
            mcp_types.TextContent(type="text", text=f"session: {session_id}"),
        ],
        structured_content=structured,
        is_error=not completed,
        _meta={SESSION_META: session_id},
    )


def _error(text: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=True)


async def serve_mcp(
    spec: AgentSpec | Sequence[AgentSpec],
    *,
    store: Store | None = None,
    http: int | None = None,
    host: str = "127.0.0.1",
    descriptions: Mapping[str, str] | None = None,
    task_status: trio.TaskStatus[int | None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Offer the agents of ``spec`` (one ``AgentSpec`` or several) as an MCP
    server: over this process's stdin and stdout until stdin ends, or, with
    ``http`` (a port; 0 picks a free one), over streamable HTTP at ``/mcp``
    on ``host`` until cancelled. Sessions live in ``store`` (default: the
    Runtime's in-memory store). ``descriptions`` gives a tool's description
    by agent name. ``task_status.started`` gets the HTTP port (None on
    stdio) once clients can connect."""
    async with Runtime(store) as runtime:
        server = AgentTools(runtime, spec, descriptions).server()
        if http is None:
            async with stdio_server() as (read, write):
                task_status.started(None)
                await server.run(read, write, server.create_initialization_options())
        else:
            await _serve_http(server, host, http, task_status)


async def _serve_http(server: Server, host: str, port: int, task_status: trio.TaskStatus[int | None]) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve
    from hypercorn.typing import ASGIFramework

    config = Config()
    config.bind = [f"{host}:{port}"]
    config.errorlog = None  # errors reach the caller; access is not logged
    app = server.streamable_http_app(host=host)
    async with trio.open_nursery() as nursery:
        # Starlette's ASGI types and hypercorn's spell the same protocol apart.
        bound = await nursery.start(partial(serve, cast("ASGIFramework", app), config, mode="asgi"))
        task_status.started(int(bound[0].rpartition(":")[2]))
