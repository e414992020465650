"""Child Python processes for the tests that need real ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[2]


async def start(module: str, *args: object, stderr: Path) -> trio.Process:
    """``python -m module args...`` from the repository root, with pipes for
    stdin and stdout and its stderr going to a file."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(stderr, "wb") as err:
        return await trio.lowlevel.open_process(
            [sys.executable, "-m", module, *map(str, args)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )


async def read_line(process: trio.Process, stderr: Path, timeout: float = 30) -> str:
    """The next line the child prints; fails with its stderr if it exits first."""
    line = b""
    with trio.fail_after(timeout):
        while not line.endswith(b"\n"):
            chunk = await process.stdout.receive_some(1)
            if not chunk:
                raise AssertionError(f"the child exited before a line:\n{stderr.read_text()}")
            line += chunk
    return line.decode().strip()
