"""Kernel confinement the supervising shim applies to itself before it starts
a sandboxed command, so that the command and all it starts inherit it.

Loaded by ``_reaper.py`` from its own directory (the shim runs with
``python -I -S``: no site-packages, so no third-party binding either, which
is why the two kernel interfaces are spoken through ``ctypes``: a few
syscalls and two structures, stable kernel ABI). It imports nothing from
agentrio, and nothing slow to import either: it runs for every command.
A policy (built by ``sandbox.Confinement``, passed to the shim as one
argument by ``encode``) has these fields:

- ``"sockets"``: None, or the address families left to ``socket(2)``
  (``"unix"``, ``"netlink"``); every other family fails with
  ``ENETUNREACH`` (a seccomp filter), so no socket can connect anywhere,
  loopback included; ``io_uring_setup`` fails too (its own socket opcode
  would pass the filter). A process of another architecture (a 32-bit
  binary, x32) is killed: its syscalls would pass the filter unchecked.
- ``"bwrap_sockets"``: the same, for the command that ``bwrap`` starts
  (which installs the filter), not for the shim nor ``bwrap``.
- ``"landlock"``: None, or ``{"read": [...], "write": [...], "dev": [...],
  "tcp": bool}``: the calling process may only read under ``read``, write
  under ``write``, read and write the existing files ``dev`` (``/dev/null``
  and the like, never a disk), and with ``tcp`` false no TCP bind or
  connect at all (ABI 4 and later). From ABI 6 it also cannot
  signal, nor reach the abstract sockets of, processes outside its domain.

Both need ``no_new_privs``, which is set first: nothing started under the
shim can gain privileges through a set-user-id program. With Landlock, a
process with capabilities (root) drops them all first, bounding set
included: Landlock does not stop a capability such as loading a kernel
module or raw I/O. Every failure raises ``OSError``: the shim then reports
it and never starts the command.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

# The shim's start pays for every import: typing only for the checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2

# -- seccomp ------------------------------------------------------------------

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_NR_SOCKET = {"x86_64": 41, "aarch64": 198}
_NR_IO_URING_SETUP = 425  # the same number on every architecture
_X32_BIT = 0x40000000
_FAMILIES = {"unix": 1, "netlink": 16}

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
# struct seccomp_data: nr (u32), arch (u32), instruction pointer (u64), args (u64 x 6)
_NR, _ARCH, _ARG0 = 0, 4, 16


def seccomp_supported() -> bool:
    return os.uname().machine in _AUDIT_ARCH


def socket_filter(families: list[str]) -> bytes:
    """A seccomp program (struct sock_filter[]) letting ``socket(2)`` make only
    ``families``; any other socket, and ``io_uring_setup``, fail."""
    machine = os.uname().machine
    if machine not in _AUDIT_ARCH:
        raise OSError(errno.ENOSYS, f"no socket filter for the {machine} architecture")
    allowed = [_FAMILIES[f] for f in families]
    deny_socket = _RET_ERRNO | errno.ENETUNREACH
    program: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, _AUDIT_ARCH[machine]),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if machine == "x86_64":
        program += [(_JGE_K, 0, 1, _X32_BIT), (_RET_K, 0, 0, _RET_KILL_PROCESS)]
    program += [
        (_JEQ_K, 0, 1, _NR_IO_URING_SETUP),
        (_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS),
        (_JEQ_K, 1, 0, _NR_SOCKET[machine]),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_LD_W_ABS, 0, 0, _ARG0),  # the family: the low half of args[0] (little endian)
    ]
    for i, family in enumerate(allowed):
        # jump to the final "allow" past the remaining checks and the deny
        program.append((_JEQ_K, len(allowed) - i, 0, family))
    program += [(_RET_K, 0, 0, deny_socket), (_RET_K, 0, 0, _RET_ALLOW)]
    return b"".join(struct.pack("=HBBI", *op) for op in program)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _install_filter(program: bytes) -> None:
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


# -- Landlock -----------------------------------------------------------------

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1, 1 << 1, 1 << 2, 1 << 3
#: Rights by the ABI that added them (ABI 1: bits 0-12; REFER; TRUNCATE; IOCTL_DEV).
_FS_BY_ABI = {1: (1 << 13) - 1, 2: 1 << 13, 3: 1 << 14, 5: 1 << 15}
_TRUNCATE, _IOCTL_DEV = 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel; 0 without Landlock."""
    version: int = _libc.syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    return max(version, 0)


def _landlock(read: list[str], write: list[str], dev: list[str], tcp: bool) -> None:
    abi = landlock_abi()
    if abi < 1:
        raise OSError(errno.EOPNOTSUPP, "Landlock is not enabled in this kernel")
    handled = 0
    for since, rights in _FS_BY_ABI.items():
        if abi >= since:
            handled |= rights
    reading = _EXECUTE | _READ_FILE | _READ_DIR
    device = (reading | _WRITE_FILE | _TRUNCATE | _IOCTL_DEV) & handled
    net = 0 if tcp or abi < 4 else _NET_BIND_TCP | _NET_CONNECT_TCP
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", handled, net, scoped)
    size = 24 if scoped else 16 if net else 8
    ruleset = _check(_libc.syscall(_SYS_CREATE_RULESET, attr, size, 0), "landlock_create_ruleset")
    try:
        for paths, rights in ((read, reading), (dev, device), (write, handled)):
            for path in paths:
                _allow(ruleset, path, rights)
        _check(_libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # nothing there to reach
    try:
        if not os.path.isdir(path):
            rights &= _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV  # file rights only
        rule = struct.pack("=Qi", rights, fd)
        _check(_libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0), f"landlock rule {path}")
    finally:
        os.close(fd)


# -- capabilities -------------------------------------------------------------


def _drop_capabilities() -> None:
    cap = 0
    while _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:  # EINVAL past the last one
        cap += 1
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL before Linux 4.3: none then
    header = struct.pack("=Ii", _CAPABILITY_VERSION_3, 0)
    _check(_libc.capset(header, bytes(24)), "capset")  # effective, permitted, inheritable: none


# -- both ---------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


#: Between fields, and between the items of a list (no path holds them).
_FIELDS, _ITEMS = "\x1e", "\x1f"


def encode(policy: dict[str, Any]) -> str:
    """``policy`` as one command-line argument: parsed without ``json``,
    whose import would cost the shim more than the rest of its start."""
    fields = []
    for key, value in policy.items():
        if isinstance(value, dict):
            fields += [
                f"{key}.{k}={_ITEMS.join(v) if isinstance(v, list) else int(v)}" for k, v in value.items()
            ]
        elif value is not None:
            fields.append(f"{key}={_ITEMS.join(value)}")
    return _FIELDS.join(fields)


def decode(text: str) -> dict[str, Any]:
    """The policy ``encode`` gave ``text`` for."""
    policy: dict[str, Any] = {"sockets": None, "landlock": None}
    for field in filter(None, text.split(_FIELDS)):
        key, _, value = field.partition("=")
        outer, _, inner = key.partition(".")
        items = value.split(_ITEMS) if value else []
        if not inner:
            policy[outer] = items
        else:
            section = policy[outer] = policy[outer] or {}
            section[inner] = value == "1" if inner == "tcp" else items
    return policy


def apply(policy: dict[str, Any], command: list[str]) -> list[str]:
    """Confine the calling (single-threaded) process and its future children;
    the command to start: ``command``, or with ``"bwrap_sockets"`` the
    ``bwrap`` command given the socket filter to install on what it runs
    (``--seccomp FD``: bwrap itself needs a socket to bring loopback up)."""
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if (landlock := policy.get("landlock")) is not None:
        if os.geteuid() == 0:
            _drop_capabilities()
        _landlock(landlock["read"], landlock["write"], landlock["dev"], landlock["tcp"])
    if (families := policy.get("sockets")) is not None:
        _install_filter(socket_filter(families))
    if (families := policy.get("bwrap_sockets")) is not None:
        read, write = os.pipe()  # the program is far smaller than a pipe's buffer
        os.write(write, socket_filter(families))
        os.close(write)
        os.set_inheritable(read, True)
        return [command[0], "--seccomp", str(read), *command[1:]]
    return command
