"""``bench/mcp_overhead.py`` runs at its --quick size and prints its figures
(none is checked)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_mcp_overhead_bench_runs_and_prints_both_transports_and_the_ratio():
    done = subprocess.run(
        [sys.executable, "bench/mcp_overhead.py", "--quick"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "  command: python bench/mcp_overhead.py --quick"
    assert [line.split()[0] for line in lines[1:3]] == ["stdio", "http"]
    assert re.fullmatch(r"http / stdio: \S+x, \+?-?\S+ ms/call \(medians of 2 runs of 5 calls\)", lines[3])
