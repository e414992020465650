"""An MCP server over stdio whose ``crash`` tool ends its own process in the
middle of the call, for the bridge's restart tests."""

import os
import subprocess
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("crash")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Exit the server's process before answering."""
    os._exit(1)


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def count(to: int, ctx: Context) -> str:
    """Count to ``to``, reporting each number as progress."""
    for number in range(1, to + 1):
        await ctx.report_progress(number, to, f"{number} of {to}")
    return "counted"


@server.tool(name="files.read", annotations=ToolAnnotations(read_only_hint=True))
def files_read(path: str) -> str:
    """A name model providers refuse: the bridge offers it as ``files_read``."""
    return f"read {path}"


@server.tool(name="fs/list", annotations=ToolAnnotations(read_only_hint=True))
def fs_list() -> str:
    """Another refused name, offered as ``fs_list``."""
    return "listed"


@server.tool()
def daemon() -> int:
    """Start a process in a session of its own that outlives the call, and
    return its pid."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(1000)"], start_new_session=True
    ).pid


@server.tool()
def broken(a: int) -> int:
    """Listed with a parameter schema that is no JSON Schema."""
    return a


server._tool_manager.get_tool("broken").parameters = {
    "type": "object",
    "properties": {"a": {"type": "bogus"}},
}


if __name__ == "__main__":
    server.run()
