"""The tests' throwaway PostgreSQL server does not outlive a killed run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from ..pgcluster import Cluster, find_binaries

STARTER = "from tests.pgcluster import Cluster; print(Cluster.start(fsync=False).folder, flush=True); input()"


def _servers_in(folder: Path) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if f"{folder}/data".encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def test_a_server_whose_owner_was_killed_is_stopped_by_the_next_start():
    root = Path(__file__).resolve().parents[2]
    owner = subprocess.Popen(
        [sys.executable, "-c", STARTER], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    folder = Path(owner.stdout.readline().strip())
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    assert _servers_in(folder), "the server should outlive its killed owner (pg_ctl made it a daemon)"
    Cluster.stop_orphans(find_binaries(), "postgres" if os.geteuid() == 0 else None)
    assert not folder.exists()
    assert _servers_in(folder) == []
