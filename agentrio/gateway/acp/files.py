"""The built-in ``read``, ``write`` and ``edit`` through the client's editor.

When a client offers ``fs.readTextFile`` and ``fs.writeTextFile``, a
session's file tools read and write through it (``fs/read_text_file``,
``fs/write_text_file``): the model sees unsaved buffers, and the editor
records its changes in its own undo history. Paths are still resolved
inside the session's workspace first. With no such client attached (it
left, or never offered them) the tools act on the disk as usual.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs

from ...tools import Tool, ToolContext, ToolResult
from ...tools.builtin.common import ToolInputError
from ...tools.builtin.editing import edit_diff, edit_result, replace_text
from ...tools.builtin.reading import MAX_CHARS, MAX_LINE_CHARS, MAX_LINES
from ...tools.builtin.text import size_of
from ...tools.builtin.workspace import Workspace
from ...tools.tool import ToolOutput
from .jsonrpc import Peer, PeerGone, RpcError

FILE_TOOLS = ("read", "write", "edit")


class ClientOffers:
    """Which client, if any, does something for a session: the latest
    attached client that offered it and is still connected."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._peers: list[Peer] = []

    def offer(self, peer: Peer) -> None:
        if peer not in self._peers:
            self._peers.append(peer)

    def peer(self) -> Peer | None:
        self._peers = [p for p in self._peers if not p.closed and p.dropped is None]
        return self._peers[-1] if self._peers else None


class ClientFiles(ClientOffers):
    """Which client, if any, holds a session's files: one that offered both
    fs capabilities."""

    async def read(self, peer: Peer, path: Path, line: int | None = None, limit: int | None = None) -> str:
        params: dict[str, Any] = {"sessionId": self.session_id, "path": str(path)}
        if line is not None:
            params.update(line=line, limit=limit)
        result = await peer.request("fs/read_text_file", params)
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise ToolInputError("the editor answered fs/read_text_file without content")
        return content

    async def write(self, peer: Peer, path: Path, content: str) -> None:
        await peer.request(
            "fs/write_text_file", {"sessionId": self.session_id, "path": str(path), "content": content}
        )


_Act = Callable[[ClientFiles, Peer, Workspace, dict[str, Any]], Awaitable[ToolResult | str]]


def through_client(tool: Tool, files: ClientFiles, cwd: Path) -> Tool:
    """``tool`` (one of ``FILE_TOOLS``), going through ``files`` when a client holds them."""
    workspace = Workspace.of(cwd)
    act = _ACTS[tool.name]

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        peer = files.peer()
        if peer is not None:
            try:
                return await act(files, peer, workspace, args)
            except ToolInputError as exc:
                return ToolResult(str(exc), is_error=True)
            except RpcError as exc:
                return ToolResult(f"the editor refused: {exc.message}", is_error=True)
            except PeerGone:
                pass  # the editor left meanwhile: the disk it is
        return await tool.execute(args, ctx)

    return attrs.evolve(tool, execute=execute)


async def _read(files: ClientFiles, peer: Peer, workspace: Workspace, args: dict[str, Any]) -> str:
    path = workspace.resolve(args["path"])
    shown = workspace.show(path)
    offset, limit = args.get("offset", 1), args.get("limit", MAX_LINES)
    text = await files.read(peer, path, offset, limit + 1)
    lines = text.splitlines()
    if not lines:
        return f"{shown} is empty" if offset == 1 else f"offset {offset} is past the end of {shown}"
    shown_lines, size = [], 0
    for number, line in enumerate(lines[:limit], start=offset):
        if size >= MAX_CHARS:
            break
        if len(line) > MAX_LINE_CHARS:
            line = (
                f"{line[:MAX_LINE_CHARS]} [... {len(line) - MAX_LINE_CHARS:,} more characters on this line]"
            )
        shown_lines.append(f"{number:>6}\t{line}")
        size += len(shown_lines[-1]) + 1
    if len(shown_lines) < len(lines):
        shown_lines.append(f"[{shown} goes on; read on with offset={offset + len(shown_lines)}]")
    return "\n".join(shown_lines)


async def _write(files: ClientFiles, peer: Peer, workspace: Workspace, args: dict[str, Any]) -> str:
    path = workspace.resolve(args["path"])
    await files.write(peer, path, args["content"])
    return f"Wrote {workspace.show(path)} ({size_of(args['content'])}) through the editor"


async def _edit(files: ClientFiles, peer: Peer, workspace: Workspace, args: dict[str, Any]) -> ToolResult:
    path = workspace.resolve(args["path"])
    shown = workspace.show(path)
    before = await files.read(peer, path)
    after, count = replace_text(before, args, shown)
    await files.write(peer, path, after)
    return edit_result(shown, count, edit_diff(before, after, shown))


#: What each file tool does through the client.
_ACTS: dict[str, _Act] = {"read": _read, "write": _write, "edit": _edit}
