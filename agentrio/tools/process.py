"""Supervised subprocesses: a time limit, capped output, and no survivors.

Each command runs under a small supervising shim (``_reaper.py``, a child
subreaper on Linux) that stays the ancestor of everything the command
starts, even of processes that change their group or session (``setsid``,
``set -m``, ``timeout``) or lose their parent. What we stop is that whole
tree: on cancel or time-out, SIGTERM to every descendant, SIGKILL to what is
left after a grace period; after a normal exit, the same for anything left
running in the background. Every process of the tree is reaped.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path

import attrs
import trio

from .. import tracing
from .output import CappedText
from .sandbox import Confinement

DEFAULT_OUTPUT_CAP = 100_000
DEFAULT_GRACE = 2.0

#: How long to go on reading the pipes once the tree is gone. Only a process
#: that escaped the shim (if it was killed) can hold them open longer; we do
#: not wait for it.
_DRAIN_TIMEOUT = 0.5
#: How long past the grace period the shim may take to stop the tree before
#: it is killed itself.
_SHIM_MARGIN = 5.0
_CHUNK = 65536
_REAPER = str(Path(__file__).with_name("_reaper.py"))

OnOutput = Callable[[str, str], None]


def supervised(
    argv: Sequence[str], grace: float, status_fd: int | None = None, *, policy: str | None = None
) -> list[str]:
    """The command line that runs ``argv`` under the supervising shim
    (``_reaper.py``): when the command ends or the shim gets SIGTERM, or the
    process that started it dies, every process the command started, in
    whatever group or session, gets TERM, then KILL ``grace`` seconds later.
    ``status_fd``: a pipe's write end (passed to the shim) on which the shim
    says how the command ended. ``policy``: the confinement (encoded, see
    ``_confine.py``) the shim applies to itself before it starts ``argv``."""
    fd = "-" if status_fd is None else str(status_fd)
    return [sys.executable, "-I", "-S", _REAPER, fd, str(grace), str(os.getpid()), policy or "-", "--", *argv]


@attrs.frozen
class ProcessResult:
    """How a supervised command ended, and what it wrote.

    ``stdout`` and ``stderr`` hold at most the output cap each, with a note
    where the middle was cut. ``exit_code`` is ``None`` when a signal ended
    the command; ``signal`` then names it.
    """

    command: str | tuple[str, ...]
    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    duration: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def status(self) -> str:
        """How the command ended, in words."""
        if self.timed_out:
            return f"timed out after {self.duration:.1f} s and was stopped"
        if self.signal is not None:
            return f"killed by {signal.Signals(self.signal).name}"
        return f"exit code {self.exit_code}"


async def run_process(
    command: str | Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | bytes | None = None,
    timeout: float | None = None,
    output_cap: int = DEFAULT_OUTPUT_CAP,
    grace: float = DEFAULT_GRACE,
    on_output: OnOutput | None = None,
    sandbox: Confinement | None = None,
) -> ProcessResult:
    """Run ``command`` (a string for ``/bin/sh``, or an argument list) and
    return how it ended.

    ``on_output(stream, text)`` receives stdout and stderr as they arrive
    ("stdout" or "stderr", decoded UTF-8, never a split character). After
    ``timeout`` seconds the command is stopped and the result says
    ``timed_out``. If the caller is cancelled, the command is stopped the same
    way before the cancellation goes on. ``env`` replaces the environment;
    without ``stdin`` the command reads from ``/dev/null``. ``sandbox``: the
    command and all it starts run confined (``sandbox.Sandbox.confine``),
    with a private temporary directory that is removed afterwards.
    """
    args: str | tuple[str, ...] = command if isinstance(command, str) else tuple(command)
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    async with _temporary(sandbox) as temp:
        return await _run(args, argv, cwd, env, stdin, timeout, output_cap, grace, on_output, sandbox, temp)


@contextlib.asynccontextmanager
async def _temporary(sandbox: Confinement | None) -> AsyncIterator[str | None]:
    """A sandbox's private temporary directory for one command, removed after it."""
    if sandbox is None:
        yield None
        return
    temp = sandbox.temporary()
    try:
        yield temp
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(functools.partial(shutil.rmtree, temp, ignore_errors=True))


async def _run(
    args: str | tuple[str, ...],
    argv: list[str],
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    stdin: str | bytes | None,
    timeout: float | None,
    output_cap: int,
    grace: float,
    on_output: OnOutput | None,
    sandbox: Confinement | None,
    temp: str | None,
) -> ProcessResult:
    program, policy = argv[0], None
    if sandbox is not None and temp is not None:
        argv, policy = sandbox.command(argv, os.path.realpath(cwd or os.getcwd()), temp)
        env = sandbox.environment(env, temp)
    started = trio.current_time()
    status_read, status_write = os.pipe()
    try:
        process = await trio.lowlevel.open_process(
            supervised(argv, grace, status_write, policy=policy),
            cwd=cwd,
            env=tracing.subprocess_env(env),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=(status_write,),
        )
    except BaseException:
        os.close(status_read)
        raise
    finally:
        os.close(status_write)
    shim = _Shim(process, trio.lowlevel.FdStream(status_read))
    captures = {"stdout": CappedText(output_cap), "stderr": CappedText(output_cap)}
    assert process.stdout is not None and process.stderr is not None  # opened as pipes
    pipes = {"stdout": process.stdout, "stderr": process.stderr}
    drained = {name: trio.Event() for name in pipes}
    try:
        async with trio.open_nursery() as nursery:
            for name, pipe in pipes.items():
                nursery.start_soon(_pump, name, pipe, captures[name], on_output, drained[name])
            if stdin is not None:
                assert process.stdin is not None  # a pipe when there is input
                nursery.start_soon(_feed, process.stdin, stdin)
            with trio.move_on_after(math.inf if timeout is None else timeout) as limit:
                await shim.ended()
            # Stop what is left while the pipes are still read, so that what
            # the command writes as it stops is kept.
            with trio.CancelScope(shield=True):
                await shim.stop(grace)
            with trio.move_on_after(_DRAIN_TIMEOUT):
                for event in drained.values():
                    await event.wait()
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await shim.stop(grace)
            for stream in (process.stdin, process.stdout, process.stderr, shim.status):
                if stream is not None:
                    await stream.aclose()

    returncode = shim.returncode(program)
    return ProcessResult(
        command=args,
        exit_code=returncode if returncode >= 0 else None,
        signal=-returncode if returncode < 0 else None,
        stdout=captures["stdout"].text,
        stderr=captures["stderr"].text,
        timed_out=limit.cancelled_caught,
        truncated=any(c.truncated for c in captures.values()),
        duration=trio.current_time() - started,
    )


async def _pump(
    name: str,
    pipe: trio.abc.ReceiveStream,
    capture: CappedText,
    on_output: OnOutput | None,
    drained: trio.Event,
) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def emit(text: str) -> None:
        if text:
            capture.append(text)
            if on_output is not None:
                on_output(name, text)

    while chunk := await pipe.receive_some(_CHUNK):
        emit(decoder.decode(chunk))
    emit(decoder.decode(b"", final=True))
    drained.set()


async def _feed(pipe: trio.abc.SendStream, data: str | bytes) -> None:
    try:
        await pipe.send_all(data.encode() if isinstance(data, str) else data)
        await pipe.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the command exited or closed its stdin without reading it all


class _Shim:
    """The supervising shim of one command (see ``_reaper.py``): it tells
    when the command ended and how, and stops the command's whole tree."""

    def __init__(self, process: trio.Process, status: trio.lowlevel.FdStream) -> None:
        self._process = process
        self.status = status
        self._line = b""
        self._stopped = False

    async def ended(self) -> None:
        """Wait until the command has ended (or the shim has died)."""
        while not self._line.endswith(b"\n"):
            chunk = await self.status.receive_some(64)
            if not chunk:
                return
            self._line += chunk

    async def stop(self, grace: float) -> None:
        """Have the shim stop the tree (SIGTERM, then SIGKILL after
        ``grace`` seconds) and wait until it has. Idempotent."""
        if self._stopped:
            return
        self._process.send_signal(signal.SIGTERM)  # nothing if it has exited
        with trio.move_on_after(grace + _SHIM_MARGIN):
            await self._process.wait()
        if self._process.returncode is None:  # the shim is stuck or stopped
            self._process.kill()
            await self._process.wait()
        await self.ended()  # at end of file by now
        if self._process.returncode != 0:
            # The shim did not finish (stuck, or killed from outside): the
            # last resort is the process group it led, which still holds
            # what did not leave it (and keeps its id from being reused).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)
        self._stopped = True

    def returncode(self, program: str) -> int:
        """How the command ended, as ``Popen.returncode`` says it (minus a
        signal number when a signal ended it). Raises ``OSError`` if the
        command could not be started."""
        match self._line.decode("ascii", errors="replace").split():
            case ["exit", code]:
                return int(code)
            case ["signal", number]:
                return -int(number)
            case ["error", errno]:
                raise OSError(int(errno), os.strerror(int(errno)), program)
        # The shim died without saying (killed from outside): its own end.
        assert self._process.returncode is not None
        return self._process.returncode
