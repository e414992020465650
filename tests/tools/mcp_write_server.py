"""An MCP server over stdio whose ``write`` tool writes a file, for the
sandbox tests."""

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("write")


@server.tool()
def write(path: str, text: str) -> str:
    """Write ``text`` to ``path`` (relative to the server's directory)."""
    try:
        Path(path).write_text(text)
    except OSError as exc:
        raise ToolError(str(exc)) from None  # the reason, not a crash report
    return f"wrote {path}"


@server.tool()
def temporary() -> str:
    """The server's temporary directory."""
    return os.environ.get("TMPDIR", "")


if __name__ == "__main__":
    server.run()
