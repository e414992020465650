"""The demo a newcomer runs first."""

import io
import subprocess
import sys

from agentrio.cli.demo import FOLLOW_UP, STEERING, run_demo


async def test_the_demo_session_fixes_the_bug_and_shows_what_happened(tmp_path):
    out = io.StringIO()
    stop = await run_demo(tmp_path, out, thinking=0)
    text = out.getvalue()
    assert stop == "completed"
    assert "return a + b" in (tmp_path / "calc.py").read_text()
    assert "def mul(a, b)" in (tmp_path / "calc.py").read_text()
    lines = text.splitlines()

    def where(fragment):
        return next(i for i, line in enumerate(lines) if fragment in line)

    # Parallel reads with their timeline, the steer after the edit started,
    # the follow-up in a turn of its own, and a summary.
    assert "read calc.py [parallel]" in text and "timeline of 3 calls" in text
    assert where("edit calc.py [exclusive]") < where(f"queued steering (next step): {STEERING[:30]}")
    assert where("└ turn 1: completed") < where("┌ turn 2") < where(f"you › {FOLLOW_UP[:30]}")
    assert "all tests passed" in text
    assert "■ run completed · 2 turns · 7 model requests · 8 tool calls" in text
    assert "\033[" not in text  # no colours when the output is not a terminal


def test_the_console_script_runs_the_demo():
    done = subprocess.run(
        [sys.executable, "-m", "agentrio", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "run completed" in done.stdout and "final calc.py:" in done.stdout


def test_an_unknown_command_is_a_usage_error_not_a_traceback():
    done = subprocess.run(
        [sys.executable, "-m", "agentrio", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "invalid choice" in done.stderr and "Traceback" not in done.stderr
