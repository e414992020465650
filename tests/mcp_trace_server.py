"""An MCP server over stdio whose one tool answers with the ``traceparent``
its call's ``_meta`` carried (empty: none)."""

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("trace")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def traceparent(ctx: Context) -> str:
    """The ``traceparent`` in the call's ``_meta``."""
    meta = ctx.request_context.meta or {}
    return str(meta.get("traceparent", ""))


if __name__ == "__main__":
    server.run()
