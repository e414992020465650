"""The built-in coding tools, each made for a workspace root.

``coding_tools(root)`` gives them all. Every path they take is resolved
inside the root (symlinks included) and refused if it leads out. The tools
that only look (``read``, ``ls``, ``grep``, ``glob``) run in parallel; those
that change things (``write``, ``edit``, ``bash``) run exclusively.
"""

from __future__ import annotations

import os

from ..sandbox import Sandbox
from ..tool import Tool
from .common import ToolInputError
from .editing import edit, write
from .listing import glob, ls
from .reading import read
from .searching import grep
from .shell import bash
from .workspace import Workspace


def coding_tools(root: Workspace | str | os.PathLike[str], *, sandbox: Sandbox | None = None) -> list[Tool]:
    """``[read, write, edit, ls, grep, glob, bash]`` for the workspace
    ``root``; ``bash`` runs its commands in ``sandbox`` (raises
    ``SandboxUnavailable`` now if this machine cannot enforce it), and a
    read-only sandbox makes ``write`` and ``edit`` refuse too."""
    workspace = Workspace.of(root)
    read_only = sandbox is not None and sandbox.mode == "read-only"
    return [
        read(workspace),
        write(workspace, read_only=read_only),
        edit(workspace, read_only=read_only),
        *(make(workspace) for make in (ls, grep, glob)),
        bash(workspace, sandbox=sandbox),
    ]


__all__ = [
    "ToolInputError",
    "Workspace",
    "bash",
    "coding_tools",
    "edit",
    "glob",
    "grep",
    "ls",
    "read",
    "write",
]
