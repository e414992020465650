"""``bash``: run a shell command in the workspace, supervised."""

from __future__ import annotations

import os
import shutil
from typing import Any

from ..process import DEFAULT_GRACE, ProcessResult
from ..sandbox import Sandbox
from ..sandbox_denials import denials
from ..tool import Tool, ToolContext, ToolResult
from .common import object_schema
from .workspace import Workspace

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
OUTPUT_CAP = 30_000


def bash(
    root: Workspace | str | os.PathLike[str],
    *,
    default_timeout: float = DEFAULT_TIMEOUT,
    max_timeout: float = MAX_TIMEOUT,
    output_cap: int = OUTPUT_CAP,
    grace: float = DEFAULT_GRACE,
    sandbox: Sandbox | None = None,
) -> Tool:
    """The ``bash`` tool for the workspace ``root``: each command runs in
    the root with a time limit (``timeout`` argument, ``default_timeout``
    when absent, never above ``max_timeout``) and at most ``output_cap``
    characters of stdout and of stderr kept. With ``sandbox``, each command
    runs confined (raises ``SandboxUnavailable`` now if it cannot be), and
    what the sandbox refused it is told as ``sandbox_denied`` events."""
    workspace = Workspace.of(root)
    confinement = None if sandbox is None else sandbox.confine(workspace.root)
    description = f"""\
Run a bash command in the workspace root and return its output and exit \
status. Each call starts a fresh shell (no state is kept between calls) with \
no input; a command still running after the time limit is stopped together \
with everything it started. Output beyond {output_cap:,} characters per \
stream is cut from the middle. Background processes do not survive the \
command. Prefer read, grep, glob and ls to inspect files.{_confined(sandbox)}"""
    parameters = object_schema(
        {
            "command": {"type": "string", "minLength": 1, "description": "The bash command to run."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": max_timeout,
                "default": default_timeout,
                "description": f"The time limit in seconds (at most {max_timeout:g}).",
            },
        },
        "command",
    )

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        shell = shutil.which("bash") or "/bin/sh"
        result = await ctx.run_process(
            [shell, "-c", args["command"]],
            cwd=workspace.root,
            timeout=min(args.get("timeout", default_timeout), max_timeout),
            output_cap=output_cap,
            grace=grace,
            sandbox=confinement,
        )
        if confinement is not None:
            for denial in denials(confinement, str(workspace.root), f"{result.stderr}\n{result.stdout}"):
                ctx.sandbox_denied(denial.kind, denial.target, denial.line)
        return command_result(result)

    def preview(args: dict[str, Any]) -> str:
        command: str = args["command"]
        return command

    return Tool("bash", description, parameters, execute, execution_mode="exclusive", preview=preview)


def _confined(sandbox: Sandbox | None) -> str:
    """What the model is told of the sandbox its commands run in."""
    if sandbox is None or sandbox.mode == "off":
        return ""
    where = "$TMPDIR" if sandbox.mode == "read-only" else "the workspace, $TMPDIR"
    if sandbox.mode != "read-only" and sandbox.writable:
        where += ", " + ", ".join(sandbox.writable)
    network = "" if sandbox.network else " and have no network"
    return f" Commands run in a sandbox: they may write only in {where}{network}."


def command_result(result: ProcessResult) -> ToolResult:
    """What ``bash`` answers for a command that ended as ``result``: its
    output, then how it ended unless it succeeded; the numbers in ``details``."""
    parts = [result.stdout.rstrip("\n")] if result.stdout else []
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    if not result.ok:
        parts.append(f"[{result.status}]")
    return ToolResult(
        "\n".join(parts) or "(no output)",
        is_error=not result.ok,
        details={
            "exit_code": result.exit_code,
            "signal": result.signal,
            "timed_out": result.timed_out,
            "truncated": result.truncated,
            "duration": round(result.duration, 3),
        },
    )
