"""The MCP server ``bench/mcp_overhead.py`` calls: one ``echo`` tool, over
stdio, or with ``--http PORT`` over streamable HTTP (uvicorn) at /mcp."""

import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("echo", log_level="WARNING")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("streamable-http", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
