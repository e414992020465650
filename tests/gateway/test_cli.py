"""``agentrio acp`` and ``agentrio serve`` refuse bad options plainly."""

from __future__ import annotations

import subprocess
import sys

from .acp_harness import ROOT


def agentrio(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentrio", *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)})


def test_a_missing_model_or_a_bad_spec_is_a_one_line_error_not_a_traceback():
    for args, message in ((["acp"], "no model: give --model"),
                          (["serve", "--spec", "nowhere:spec"], "--spec nowhere:spec: No module named 'nowhere'"),
                          (["acp", "--model", "openai:x"], "OPENAI_API_KEY is not set"),
                          (["acp", "--spec", "agentrio"], "--spec takes MODULE:ATTR")):
        done = agentrio(*args)
        assert done.returncode == 1, done
        assert done.stderr.startswith("agentrio: error: ") and done.stderr.count("\n") == 1, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr and done.stdout == ""
