"""The README's promises: its example runs as written, its Quick start is
exactly two commands, and .ci/run runs the same ones."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(language, text=README):
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_tour_example_runs_as_written(tmp_path):
    example = _blocks("python")[0]
    script = tmp_path / "tour.py"
    script.write_text(example)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["  read_config -> eu-west-1", "completed - The service runs in eu-west-1."]


def test_quick_start_is_two_commands_and_ci_runs_them():
    quick_start = README.split("## Quick start", 1)[1]
    commands = [line for line in _blocks("sh", quick_start)[0].splitlines() if line.strip()]
    assert commands == ["pip install -e '.[test]' && agentrio demo", "pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert all(command in ci.splitlines() for command in commands)
