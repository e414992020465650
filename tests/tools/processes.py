"""Looking at real processes through /proc, for the tests that start them."""

import os
import secrets
import time
from pathlib import Path

import trio


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone, or going (ESRCH while it is torn down)
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def assert_all_gone(pids: list[int]) -> None:
    # A killed process needs a moment to leave the process table.
    deadline = time.monotonic() + 5
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [p for p in pids if running(p)] == []


def processes_with(marker: str) -> list[int]:
    """The live processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            pid = int(entry.name)
            command = _command_line(pid)
            if command is not None and marker.encode() in command and running(pid):
                found.append(pid)
    return found


def zombie_children() -> list[int]:
    """Our children that ended and were never reaped."""
    zombies = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, ppid, *_ = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(ppid) == os.getpid() and state == "Z":
                zombies.append(int(entry.name))
    return zombies


def sleepers(marker: str) -> list[int]:
    """The live ``sleep {marker}`` processes (not the shells that start them)."""
    return [p for p in processes_with(marker) if _command_line(p) == f"sleep\0{marker}\0".encode()]


def _command_line(pid: int) -> bytes | None:
    """``pid``'s command line; None once it has ended (it may end at any time)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


async def wait_for_sleeper(marker: str) -> None:
    while not sleepers(marker):
        await trio.sleep(0.01)


def unique_duration() -> str:
    return f"{1000 + secrets.randbelow(10**6)}.{secrets.randbelow(10**6)}"
