"""Agent sessions for other programs: the Agent Client Protocol (ACP) over
stdio (``serve_stdio``) and over WebSocket with a web console
(``serve_websocket``), on a ``SessionHub`` opened by ``open_hub``; and
agents offered as MCP tools (``mcp_serve.serve_mcp``, the optional ``mcp``
extra)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from ..journal import Store
from ..supervisors import Runtime
from ..tools.sandbox import Sandbox
from .acp.remote import remote_sessions
from .acp.sessions import SessionHub, SpecFactory
from .agents import AgentFactory, SpecError

__all__ = ["AgentFactory", "SessionHub", "SpecError", "open_hub"]


@asynccontextmanager
async def open_hub(
    store: Store,
    spec_for: SpecFactory,
    default_cwd: Path | None = None,
    *,
    route_files: bool = False,
    root: Path | None = None,
    sandbox: Sandbox | None = None,
) -> AsyncIterator[SessionHub]:
    """A hub on a Runtime over ``store`` (see ``SessionHub``); leaving stops
    the pumps, then disposes every agent."""
    # The built-in agent's model may be switched (session/set_config_option); a --spec's is its own.
    model_for = spec_for.model_for if isinstance(spec_for, AgentFactory) and spec_for.spec is None else None
    async with Runtime(store) as runtime, trio.open_nursery() as nursery:
        hub = SessionHub(
            runtime,
            spec_for,
            nursery,
            default_cwd,
            route_files=route_files,
            root=root,
            sandbox=sandbox,
            model_for=model_for,
        )
        # A session another process holds is served from its journal, where the store can.
        hub.remote = remote_sessions(hub)
        try:
            yield hub
        finally:
            nursery.cancel_scope.cancel()
