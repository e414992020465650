"""The supervising shim between ``run_process`` and the command it runs.

Run as a script (``python -I -S _reaper.py STATUS_FD GRACE RUNNER POLICY --
ARGV...``, with STATUS_FD ``-`` when nobody reads the command's end, RUNNER
the pid of the process that starts the shim, and POLICY ``-`` or the
confinement of a sandbox (encoded by ``_confine.py``), which the shim applies to itself
before it starts ARGV, so that the whole tree inherits it; it imports
nothing from agentrio, so it starts fast). It makes itself a child
subreaper (Linux), starts ARGV, and so stays the ancestor of everything the
command starts: a process that changes its group or session (``setsid``,
``set -m``, ``timeout``) or whose parent exits is re-parented to the shim,
not to init. The whole tree is therefore found by walking parent links
from the shim, and stopped:

- when the command exits, or when the shim receives SIGTERM (the runner's
  cancel or time limit), every descendant gets SIGTERM; whatever still runs
  ``GRACE`` seconds later gets SIGKILL, round after round until none is
  left (a process that forks while being killed is caught by the next
  round); every descendant is reaped, so no zombie is left either;
- the same when the runner dies (it is killed outright: the shim's parent
  is no longer RUNNER), so a command never outlives the process that
  started it; a runner dead before the shim got going means ARGV never
  starts;
- the command's end is written to STATUS_FD as one line as soon as it is
  known — ``exit N``, ``signal N``, or ``error ERRNO`` when ARGV could not
  be started — and the shim exits once the tree is gone.

The subreaper property is per process, which is why it lives here and not
in the runner: a host process made a subreaper would inherit the orphans of
every subprocess it starts, and reaping them would race the owners of those
subprocesses. Without ``prctl`` (not Linux) the tree is whatever ``/proc``
or ``ps`` still links to the shim.
"""

from __future__ import annotations

import os
import signal
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36
_POLL = 0.01
#: How often, in seconds, the shim checks that the runner is still alive (at
#: least: it checks whenever it wakes).
_RUNNER_CHECK = 0.5
_PROC = "/proc"


def main(argv: list[str]) -> int:
    status_fd = None if argv[0] == "-" else int(argv[0])
    grace, runner, policy, command = float(argv[1]), int(argv[2]), argv[3], argv[5:]
    if status_fd is not None:
        os.set_inheritable(status_fd, False)
    _become_subreaper()
    # The runner's pid comes on the command line, not from getppid() here:
    # a runner killed before this line ran has already left the shim to
    # init, and the command must not start for nobody.
    if os.getppid() != runner:
        return 0
    # Both signals are taken by sigtimedwait, never by a handler, so neither
    # can interrupt the bookkeeping; SIGCHLD needs a handler to be queued.
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)
    try:
        if policy != "-":
            command = _confine(policy, command)
        child = os.posix_spawnp(
            command[0],
            command,
            os.environ,
            setsigmask=(),
            # Python ignores these; the command starts with the defaults.
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    except OSError as e:
        _report(status_fd, f"error {e.errno}")
        if status_fd is None:
            print(f"cannot run {command[0]}: {e.strerror}", file=sys.stderr)
            return 127
        return 0
    tree = _Tree(child)
    while tree.status is None:
        got = signal.sigtimedwait(_WAITED, _RUNNER_CHECK)
        if got is not None and got.si_signo == signal.SIGTERM:
            break
        # At every wake-up, not only after a quiet _RUNNER_CHECK: a tree
        # that keeps ending processes sends SIGCHLD more often than that.
        if os.getppid() != runner:
            break  # the runner died (killed outright): stop the tree all the same
        tree.reap()
    ended_alone = tree.status is not None
    if ended_alone:  # say so at once; the rest may take the grace period
        _report(status_fd, tree.status)
    tree.stop(grace)
    if not ended_alone:
        _report(status_fd, tree.status)
    return 0


_WAITED = {signal.SIGTERM, signal.SIGCHLD}


def _become_subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _confine(policy: str, command: list[str]) -> list[str]:
    # Imported from this file's directory for the time of this import only
    # (no file there is named like a module it imports): importlib.util
    # would cost more than the import itself.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import _confine  # type: ignore[import-not-found]
    finally:
        del sys.path[0]
    confined: list[str] = _confine.apply(_confine.decode(policy), command)
    return confined


def _report(fd: int | None, status: str | None) -> None:
    # Once the tree is stopped every descendant is reaped, the command too.
    assert status is not None
    if fd is None:
        return
    try:
        os.write(fd, f"{status}\n".encode())
    except BrokenPipeError:
        pass  # the runner is gone; the tree is stopped all the same
    finally:
        os.close(fd)


class _Tree:
    """The shim's descendants; the command is its one direct child."""

    def __init__(self, child: int) -> None:
        self.child = child
        #: How the command ended ("exit N", "signal N"), once it is reaped.
        self.status: str | None = None

    def stop(self, grace: float) -> None:
        """SIGTERM every descendant, SIGKILL those left after ``grace``
        seconds, and reap them all."""
        if not self.reap():
            return  # no child left, so no descendant: nothing to look for
        for pid in self._living():
            _kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.reap() and self._living() and time.monotonic() < deadline:
            time.sleep(_POLL)
        while living := self._living():
            for pid in living:
                _kill(pid, signal.SIGKILL)
            self.reap()
            time.sleep(_POLL)
        while self.reap():
            time.sleep(_POLL)

    def reap(self) -> bool:
        """Reap every descendant that has ended; whether any remain."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.child:
                code = os.waitstatus_to_exitcode(status)
                self.status = f"exit {code}" if code >= 0 else f"signal {-code}"

    def _living(self) -> list[int]:
        """Every descendant that is not a zombie, found by parent links."""
        children: dict[int, list[int]] = {}
        for pid, ppid, state in _processes():
            if state not in ("Z", "X"):
                children.setdefault(ppid, []).append(pid)
        found, todo = [], [os.getpid()]
        while todo:
            for pid in children.get(todo.pop(), ()):
                found.append(pid)
                todo.append(pid)
        return found


def _processes() -> list[tuple[int, int, str]]:
    """(pid, parent pid, state) of every process."""
    if not os.path.isdir(_PROC):
        import subprocess

        out = subprocess.run(
            ["ps", "-A", "-o", "pid=,ppid=,stat="], capture_output=True, text=True, check=False
        ).stdout
        return [(int(p), int(pp), st[:1]) for p, pp, st in (line.split()[:3] for line in out.splitlines())]
    found = []
    for name in os.listdir(_PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue  # exited while we looked
        # Fields after the command name (which may hold spaces and parentheses).
        state, ppid, *_ = stat.rpartition(")")[2].split()
        found.append((int(name), int(ppid), state))
    return found


def _kill(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
