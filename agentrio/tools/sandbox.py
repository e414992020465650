"""Sandboxes for subprocess tools, enforced by the kernel.

``Sandbox(mode, network=..., writable=..., readable=...)`` says what the
commands a tool runs may touch; ``sandbox.confine(cwd)`` checks that this
machine can enforce it and gives the ``Confinement`` that ``run_process``
and ``mcp_server`` apply to every process they start. Nothing parses
commands: the kernel refuses what is not allowed, and the command sees
``Read-only file system``, ``Permission denied`` or ``Network is
unreachable`` like any other error.

Two mechanisms, the first usable one wins (``Sandbox.backend()``):

- ``bubblewrap`` (``bwrap``): a mount namespace in which the filesystem is
  bound read-only and only the writable paths are bound writable, a fresh
  ``/dev`` and ``/proc`` (its own process namespace: it sees, signals and
  traces nothing outside), no capabilities, ``--new-session``,
  ``--die-with-parent``, and with ``network=False`` its own network
  namespace;
- ``landlock``: the Landlock LSM (Linux 5.13+): read rights on the readable
  paths, every right on the writable ones; from ABI 4 no TCP with
  ``network=False``, from ABI 6 no signals to processes outside.

With ``network=False`` both add a seccomp filter under which ``socket(2)``
makes no socket at all (``socketpair`` still works), so no connection is
possible: to loopback neither, nor to a Unix socket of a daemon outside
(the session bus, which could start commands unconfined, or Docker's). Each
command gets a private temporary directory, writable and handed to it as
``TMPDIR`` (also ``TMP`` and ``TEMP``), removed once the command is over.
The confinement is applied by the supervising shim to itself before it
starts the command, so the shim's guarantees (TERM then KILL to the whole
tree, no survivors, capped output) hold inside as outside.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from . import _confine

Mode = Literal["read-only", "workspace-write", "off"]
Mechanism = Literal["bubblewrap", "landlock"]
MODES: tuple[Mode, ...] = ("read-only", "workspace-write", "off")
MECHANISMS: tuple[Mechanism, ...] = ("bubblewrap", "landlock")
#: What a command may always read when ``readable`` narrows the filesystem:
#: the programs and libraries it runs with (this Python's too), and its own
#: process's files.
SYSTEM_PATHS = tuple(
    dict.fromkeys(
        ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc")
        + (os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix))
    )
)
TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")
#: The device files a command may write under Landlock (bubblewrap makes a
#: ``/dev`` of its own with these alone); never a disk.
DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
)
#: How long the check that a mechanism works may take.
_PROBE_TIMEOUT = 10.0


class SandboxUnavailable(RuntimeError):
    """This machine cannot enforce the sandbox asked for. Raised when the
    tools are made: a sandboxed tool never runs unsandboxed."""


def _paths(paths: Iterable[str | os.PathLike[str]]) -> tuple[str, ...]:
    if isinstance(paths, (str, os.PathLike)):
        raise TypeError("expected a sequence of paths, got a single path; wrap it in a tuple")
    real = tuple(os.path.realpath(p) for p in paths)
    if any(c in path for path in real for c in "\x1e\x1f"):
        raise ValueError("a sandbox path may not hold the ASCII separators \\x1e or \\x1f")
    return real


def _optional_paths(paths: Iterable[str | os.PathLike[str]] | None) -> tuple[str, ...] | None:
    return None if paths is None else _paths(paths)


def _one_of(choices: Sequence[object]) -> Callable[[object, attrs.Attribute[Any], object], None]:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value not in choices:
            raise ValueError(
                f"Sandbox.{attribute.name} must be one of {', '.join(map(repr, choices))}, got {value!r}"
            )

    return check


@attrs.frozen
class Sandbox:
    """What the processes of subprocess tools may touch.

    ``mode``: ``"workspace-write"`` — write only under the tools' ``cwd``,
    the paths in ``writable`` and a private temporary directory;
    ``"read-only"`` — write only in the private temporary directory;
    ``"off"`` — no sandbox. ``network=False``: no socket connects anywhere,
    loopback included. ``readable=None``: the whole filesystem is readable
    (``/tmp`` included); a sequence narrows reading to those paths, the
    writable ones and the system's (``SYSTEM_PATHS``). ``mechanism`` forces
    ``"bubblewrap"`` or ``"landlock"`` instead of the first usable one.
    """

    mode: Mode = attrs.field(default="workspace-write", validator=_one_of(MODES))
    network: bool = attrs.field(default=False, kw_only=True)
    writable: tuple[str, ...] = attrs.field(default=(), kw_only=True, converter=_paths)
    readable: tuple[str, ...] | None = attrs.field(default=None, kw_only=True, converter=_optional_paths)
    mechanism: Mechanism | None = attrs.field(
        default=None, kw_only=True, validator=_one_of((None, *MECHANISMS))
    )

    @classmethod
    def backend(cls) -> Mechanism | None:
        """The mechanism that enforces a sandbox here (``"bubblewrap"``,
        ``"landlock"``), or None when none works."""
        return next((m for m in MECHANISMS if _unusable(m) is None), None)

    def confine(self, cwd: str | os.PathLike[str]) -> Confinement | None:
        """How processes that tools start in ``cwd`` are confined; None when
        the mode is ``off``. Raises ``SandboxUnavailable`` when no mechanism
        (or not the one forced) can enforce it here, and ``ValueError`` for a
        writable path that is no directory."""
        if self.mode == "off":
            return None
        write = () if self.mode == "read-only" else _paths((cwd, *self.writable))
        for path in write:
            if not os.path.isdir(path):
                raise ValueError(f"sandbox: writable path {path} is not a directory")
        candidates = (self.mechanism,) if self.mechanism else MECHANISMS
        reasons = []
        for mechanism in candidates:
            reason = _unusable(mechanism, self.network)
            if reason is None:
                read = (
                    None if self.readable is None else (*SYSTEM_PATHS, os.path.realpath(cwd), *self.readable)
                )
                return Confinement(mechanism, self.network, write, read)
            reasons.append(f"{mechanism}: {reason}")
        network = "with" if self.network else "without"
        raise SandboxUnavailable(
            f"cannot enforce the {self.mode} sandbox ({network} network) here: {'; '.join(reasons)}. "
            "Install bubblewrap, or run without a sandbox (mode 'off')"
        )


@attrs.frozen
class Confinement:
    """A sandbox this machine enforces, ready to apply to commands."""

    mechanism: Mechanism
    network: bool
    #: Besides each command's temporary directory.
    writable: tuple[str, ...]
    #: None: everything.
    readable: tuple[str, ...] | None

    def command(self, argv: Sequence[str], cwd: str, temp: str) -> tuple[list[str], str]:
        """``argv`` as it runs confined, in ``cwd`` with the temporary
        directory ``temp``, and the shim's policy (``_confine.py``) for it."""
        writable = (*self.writable, temp)
        policy: dict[str, object] = {"sockets": None, "landlock": None}
        if self.mechanism == "landlock":
            policy["landlock"] = {
                "read": list(self.readable or ("/",)),
                "write": list(writable),
                "dev": list(DEVICES),
                "tcp": self.network,
            }
            if not self.network:
                policy["sockets"] = []
            return list(argv), _confine.encode(policy)
        if not self.network:
            policy["bwrap_sockets"] = []
        bwrap = _bwrap_options(self.network, self.readable, writable, cwd)
        return [*bwrap, "--", *argv], _confine.encode(policy)

    def environment(self, env: Mapping[str, str] | None, temp: str) -> dict[str, str]:
        """``env`` (None: this process's) with the temporary directory."""
        return {**(os.environ if env is None else env), **dict.fromkeys(TEMP_VARIABLES, temp)}

    @staticmethod
    def temporary() -> str:
        """A new private temporary directory; the caller removes it."""
        return tempfile.mkdtemp(prefix="agentrio-sandbox-")


def _bwrap_options(
    network: bool, readable: tuple[str, ...] | None, writable: Sequence[str], cwd: str
) -> list[str]:
    options = [_bwrap(), "--die-with-parent", "--new-session", "--unshare-pid", "--cap-drop", "ALL"]
    if not network:
        options.append("--unshare-net")
    for path in readable or ("/",):
        options += ["--ro-bind-try", path, path]
    options += ["--dev", "/dev", "--proc", "/proc"]
    for path in writable:
        options += ["--bind", path, path]
    return [*options, "--chdir", cwd]


def _bwrap() -> str:
    return shutil.which("bwrap") or "bwrap"


@functools.cache
def _unusable(mechanism: Mechanism, network: bool = False) -> str | None:
    """Why ``mechanism`` cannot enforce a sandbox here (None: it can),
    found by running a confined command once."""
    if not sys.platform.startswith("linux"):
        return "only on Linux"
    if mechanism == "bubblewrap" and shutil.which("bwrap") is None:
        return "bwrap is not installed"
    if mechanism == "landlock" and _confine.landlock_abi() < 1:
        return "Landlock is not enabled in this kernel"
    if not network and not _confine.seccomp_supported():
        return "no socket filter for this architecture, so the network cannot be cut"
    return _probe(Confinement(mechanism, network, (), None))


def _probe(confinement: Confinement) -> str | None:
    from .process import supervised

    temp = Confinement.temporary()
    try:
        true = shutil.which("true") or "/bin/true"
        argv, policy = confinement.command([true], temp, temp)
        status_read, status_write = os.pipe()
        try:
            done = subprocess.run(
                supervised(argv, 0.1, status_write, policy=policy),
                cwd=temp,
                capture_output=True,
                timeout=_PROBE_TIMEOUT,
                check=False,
                pass_fds=(status_write,),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        finally:
            os.close(status_write)
            with os.fdopen(status_read, "rb") as status:
                ended = status.read().decode(errors="replace").strip()
        if ended != "exit 0":
            said = done.stderr.decode(errors="replace").strip().splitlines()
            return said[-1] if said else f"a confined command failed ({ended or 'no status'})"
        return None
    finally:
        shutil.rmtree(temp, ignore_errors=True)
