"""What a sandbox refused a command, as far as its error output tells.

The kernel does not tell us; the command's own error lines do, in the few
forms that programs print them (``bash: line 1: /etc/x: Read-only file
system``, ``touch: cannot touch '/x': ...``, Python's ``[Errno 30]
Read-only file system: '/x'``, ``... Network is unreachable``). A path is
reported only when it lies outside what the sandbox lets the command write,
so an ordinary error inside the workspace is not taken for a denial.
"""

from __future__ import annotations

import os
import re
from typing import Literal

import attrs

from .sandbox import Confinement

#: At most this many denials are reported for one command.
MAX_DENIALS = 10

_READ_ONLY = "Read-only file system"
_PERMISSION = "Permission denied"
_UNREACHABLE = "Network is unreachable"
_QUOTED = re.compile(r"[‘'\"`]([^‘’'\"`]+)[’'\"`]\s*$")
_ADDRESS = re.compile(r"\b((?:\d{1,3}\.){3}\d{1,3}|localhost|\[[0-9a-fA-F:]+\])(?::| port )(\d{1,5})\b")


@attrs.frozen
class Denial:
    """One refusal: ``kind`` ``"path"`` (``target`` the real path) or
    ``"network"`` (``target`` ``host:port`` when the output names it), and
    the output line that told it."""

    kind: Literal["path", "network"]
    target: str | None
    line: str


def denials(confinement: Confinement, cwd: str, output: str) -> list[Denial]:
    """The denials ``output`` (a confined command's, run in ``cwd``) tells of."""
    # Landlock says EACCES; a read-only mount says EROFS.
    messages = (_READ_ONLY, _PERMISSION) if confinement.mechanism == "landlock" else (_READ_ONLY,)
    found: dict[tuple[str, str | None], Denial] = {}
    for line in output.splitlines():
        line = line.strip()
        denial = None
        if _UNREACHABLE in line and not confinement.network:
            address = _ADDRESS.search(line)
            denial = Denial("network", address and f"{address[1]}:{address[2]}", line)
        elif message := next((m for m in messages if m in line), None):
            path = _path_in(line, message)
            if path and not _writable(confinement, real := os.path.realpath(os.path.join(cwd, path))):
                denial = Denial("path", real, line)
        if denial is not None:
            found.setdefault((denial.kind, denial.target), denial)
            if len(found) == MAX_DENIALS:
                break
    return list(found.values())


def _path_in(line: str, message: str) -> str | None:
    before, _, after = line.partition(message)
    if after.startswith(": "):  # Python: "[Errno 30] Read-only file system: '/x'"
        return after[2:].strip().strip("'\"‘’") or None
    segment = before.rstrip().removesuffix(":").rsplit(": ", 1)[-1].strip()
    quoted = _QUOTED.search(segment)
    if quoted:
        return quoted[1]
    words = segment.split()
    return words[-1] if words else None


def _writable(confinement: Confinement, path: str) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in confinement.writable)
