"""Supervised subprocesses: a time limit, capped output, and no survivors.

Each command runs as the leader of a new session, hence of a new process
group. Whatever it starts stays in that group, so the group is what we stop:
on cancel or time-out, SIGTERM to the group, SIGKILL to what is left after a
grace period; after a normal exit, the same for anything left running in the
background. The leader is always reaped. A process that leaves the group on
purpose (``setsid``, a daemon) is out of reach; its hold on our pipes is cut
by closing them.
"""

from __future__ import annotations

import codecs
import math
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs
import trio

from .output import CappedText

DEFAULT_OUTPUT_CAP = 100_000
DEFAULT_GRACE = 2.0

#: How long to go on reading the pipes once the group is gone. Only a process
#: that escaped the group can hold them open longer; we do not wait for it.
_DRAIN_TIMEOUT = 0.5
_POLL_INTERVAL = 0.02
_CHUNK = 65536
_PROC = Path("/proc")

OnOutput = Callable[[str, str], None]


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
) -> ProcessResult:
    """Run ``command`` (a string for ``/bin/sh``, or an argument list) and
    return how it ended.

    ``on_output(stream, text)`` receives stdout and stderr as they arrive
    ("stdout" or "stderr", decoded UTF-8, never a split character). After
    ``timeout`` seconds the command is stopped and the result says
    ``timed_out``. If the caller is cancelled, the command is stopped the same
    way before the cancellation goes on. ``env`` replaces the environment;
    without ``stdin`` the command reads from ``/dev/null``.
    """
    shell = isinstance(command, str)
    args: str | tuple[str, ...] = command if shell else tuple(command)
    started = trio.current_time()
    process = await trio.lowlevel.open_process(
        args if shell else list(args),
        shell=shell,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    group = _ProcessGroup(process)
    captures = {"stdout": CappedText(output_cap), "stderr": CappedText(output_cap)}
    pipes = {"stdout": process.stdout, "stderr": process.stderr}
    drained = {name: trio.Event() for name in pipes}
    try:
        async with trio.open_nursery() as nursery:
            for name, pipe in pipes.items():
                nursery.start_soon(_pump, name, pipe, captures[name], on_output, drained[name])
            if stdin is not None:
                nursery.start_soon(_feed, process.stdin, stdin)
            with trio.move_on_after(math.inf if timeout is None else timeout) as limit:
                await process.wait()
            # Stop what is left while the pipes are still read, so that what
            # the command writes as it stops is kept.
            with trio.CancelScope(shield=True):
                await group.stop(grace)
            with trio.move_on_after(_DRAIN_TIMEOUT):
                for event in drained.values():
                    await event.wait()
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await group.stop(grace)
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()

    returncode = process.returncode
    assert returncode is not None
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


class _ProcessGroup:
    """The process group led by one supervised command."""

    def __init__(self, leader: trio.Process) -> None:
        self._leader = leader
        self._pgid = leader.pid
        self._stopped = False

    async def stop(self, grace: float) -> None:
        """SIGTERM the group, SIGKILL whatever still runs after ``grace``
        seconds, and reap the leader. Idempotent."""
        if self._stopped:
            return
        if self._running():
            self._signal(signal.SIGTERM)
            with trio.move_on_after(grace):
                while self._running():
                    await trio.sleep(_POLL_INTERVAL)
            if self._running():
                self._signal(signal.SIGKILL)
        await self._leader.wait()
        self._stopped = True

    def _signal(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self._pgid, sig)
        except ProcessLookupError:
            pass

    def _running(self) -> bool:
        """Whether any process of the group still runs (zombies do not)."""
        # Reap the leader as soon as it exits: an unreaped leader would count
        # as a member where /proc cannot tell zombies apart. Once it is reaped
        # and the group is empty its id could in principle be reused by a new
        # group within the next poll; pid allocation is sequential, so that
        # would take a full wrap-around of the pid space in milliseconds.
        self._leader.poll()
        try:
            os.killpg(self._pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not _PROC.is_dir() or _has_running_member(self._pgid)


def _has_running_member(pgid: int) -> bool:
    """Whether /proc lists a process of group ``pgid`` that is not a zombie.
    Orphaned children are reaped by init, which may take its time."""
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        try:
            with open(os.path.join(entry.path, "stat"), encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue  # exited while we looked
        # Fields after the command name (which may hold spaces and parentheses).
        state, _ppid, pgrp, *_ = stat.rpartition(")")[2].split()
        if int(pgrp) == pgid and state not in ("Z", "X"):
            return True
    return False
