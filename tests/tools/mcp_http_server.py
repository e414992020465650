"""An MCP server over streamable HTTP (or, with ``--sse``, the older SSE
transport) on a loopback port, for the HTTP bridge's tests.

``python mcp_http_server.py PORT [--sse]``. Each call of ``slow`` that is
cancelled is written, as a line, to the file named by ``$CANCEL_LOG``.
"""

import hashlib
import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("remote", log_level="WARNING")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def authorization(ctx: Context) -> str:
    """A digest of the request's Authorization header (the header itself
    would be logged by the client's debug log of results)."""
    return hashlib.sha256((ctx.headers or {}).get("authorization", "none").encode()).hexdigest()


def log_cancelled(request_id: str) -> None:
    with open(os.environ["CANCEL_LOG"], "a") as log:
        log.write(f"cancelled {request_id}\n")


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleep, reporting progress first; a cancelled call is logged."""
    await ctx.report_progress(0, 1, "sleeping")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        log_cancelled(ctx.request_id)
        raise
    return "slept"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called ``name`` and tell the client the list changed."""
    server.add_tool(lambda: f"{name} here", name=name, description=f"the tool {name}")
    server.remove_tool("grow")
    await ctx.request_context.session.send_tool_list_changed()
    return "grown"


if __name__ == "__main__":
    port = int(sys.argv[1])
    if "--sse" in sys.argv:
        server.run("sse", port=port)
    else:
        server.run("streamable-http", port=port)
