"""The ``agentrio`` command driven as a person drives it: in a real
pseudo-terminal (pexpect), against the fake Chat Completions server."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import attrs
import pexpect
import pytest
import trio

from ..fake_openai import FakeServer, start_fake_openai

ROOT = Path(__file__).resolve().parents[2]
#: How long any single expectation may wait before the test fails.
PATIENCE = 30.0
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>78]|\r")


@attrs.define
class Terminal:
    """A child process on a pseudo-terminal. ``expect`` waits for a pattern
    in what the screen received, escape sequences removed, after the last
    match; it runs pexpect's blocking reads in a thread, each bounded."""

    child: pexpect.spawn
    raw: str = ""
    position: int = 0
    status: int | None = None

    @property
    def text(self) -> str:
        return _ESCAPES.sub("", self.raw)

    def _read(self, timeout: float) -> str | None:
        try:
            return self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return ""
        except pexpect.EOF:
            return None

    async def expect(self, pattern: str, *, timeout: float = PATIENCE) -> re.Match:
        regex = re.compile(pattern)
        with trio.move_on_after(timeout):
            while True:
                if match := regex.search(self.text, self.position):
                    self.position = match.end()
                    return match
                chunk = await trio.to_thread.run_sync(self._read, 0.2)
                if chunk is None:
                    raise AssertionError(f"the process ended before {pattern!r}; it printed:\n{self.text}")
                self.raw += chunk
        raise AssertionError(f"no {pattern!r} within {timeout}s; the process printed:\n{self.text}")

    async def expect_text(self, text: str, **options: float) -> re.Match:
        return await self.expect(re.escape(text), **options)

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def type_line(self, line: str) -> None:
        self.child.send(line + "\r")

    def interrupt(self) -> None:
        self.child.sendintr()

    async def wait(self, *, timeout: float = PATIENCE) -> int:
        """Read to the end; the exit status (128 + N for signal N)."""
        with trio.fail_after(timeout):
            while (chunk := await trio.to_thread.run_sync(self._read, 0.2)) is not None:
                self.raw += chunk
        await trio.to_thread.run_sync(self.child.close)
        self.status = (
            self.child.exitstatus if self.child.signalstatus is None else 128 + self.child.signalstatus
        )
        return self.status


@attrs.define
class CommandLine:
    server: FakeServer
    workspace: Path
    db: Path
    env: dict[str, str]
    children: list[Terminal] = attrs.field(factory=list)

    def argv(self, *args: str, model: bool = True) -> list[str]:
        options = ["--model", "openai:fake", "--base-url", self.server.base_url] if model else []
        return ["-m", "agentrio", *args, *options, "--db", str(self.db)]

    def spawn(
        self, *args: str, model: bool = True, stdin: str | None = None, env: dict | None = None
    ) -> Terminal:
        argv = [sys.executable, *self.argv(*args, model=model)]
        if stdin is None:
            child = pexpect.spawn(
                argv[0],
                argv[1:],
                cwd=str(self.workspace),
                env={**self.env, **(env or {})},
                dimensions=(40, 120),
                encoding="utf-8",
                codec_errors="replace",
            )
        else:
            # A pipe on stdin: the shell runs it so that stdin is not the terminal.
            command = " ".join(shlex.quote(a) for a in argv)
            child = pexpect.spawn(
                "/bin/sh",
                ["-c", f"printf %s {shlex.quote(stdin)} | {command}"],
                cwd=str(self.workspace),
                env={**self.env, **(env or {})},
                dimensions=(40, 120),
                encoding="utf-8",
                codec_errors="replace",
            )
        terminal = Terminal(child)
        self.children.append(terminal)
        return terminal

    async def run(
        self, *args: str, model: bool = True, env: dict | None = None
    ) -> subprocess.CompletedProcess:
        """Run the command with pipes, not a terminal, on stdin, stdout and
        stderr: what it writes to each stays apart."""
        with trio.fail_after(PATIENCE):
            return await trio.run_process(
                [sys.executable, *self.argv(*args, model=model)],
                cwd=str(self.workspace),
                env={**self.env, **(env or {})},
                stdin=b"",
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )


@pytest.fixture
async def cli(nursery, tmp_path):
    server = await start_fake_openai(nursery)
    workspace = tmp_path / "work"
    workspace.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AGENTRIO_", "OPENAI_", "ANTHROPIC_"))
        and key not in ("NO_COLOR", "COLUMNS", "LINES")
    }
    # The user's own files (config, history, the default store) stay out of reach.
    env.update(
        PYTHONPATH=str(ROOT),
        TERM="xterm-256color",
        OPENAI_API_KEY="test-key",
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    command_line = CommandLine(server, workspace, tmp_path / "sessions.db", env)
    yield command_line
    for terminal in command_line.children:
        if terminal.child.isalive():
            terminal.child.terminate(force=True)
