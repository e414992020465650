"""``agentrio acp`` and ``agentrio serve`` refuse bad options plainly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .acp_harness import ROOT


def agentrio(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentrio", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)},
        check=False,
    )


def test_a_missing_model_or_a_bad_spec_is_a_one_line_error_not_a_traceback():
    for args, message in (
        (["acp"], "no model: give --model"),
        (["serve", "--spec", "nowhere:spec"], "--spec nowhere:spec: No module named 'nowhere'"),
        (["acp", "--model", "openai:x"], "OPENAI_API_KEY is not set"),
        (["acp", "--spec", "agentrio"], "--spec takes MODULE:ATTR"),
    ):
        done = agentrio(*args)
        assert done.returncode == 1, done
        assert done.stderr.startswith("agentrio: error: ") and done.stderr.count("\n") == 1, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr and done.stdout == ""


def serve(tmp_path: Path, *args: str) -> tuple[str, str]:
    """Start ``agentrio serve ARGS`` on a free port: its banner's first line
    and what it said on stderr before it, then stop it."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": "fake",
    }
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentrio",
            "serve",
            "--port",
            "0",
            "--model",
            "openai:x",
            "--db",
            str(tmp_path / "s.db"),
            *args,
        ],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    ) as process:
        try:
            banner = process.stdout.readline()
        finally:
            process.terminate()
        stderr = process.stderr.read()
    return banner, stderr


def test_serve_refuses_a_short_token_and_warns_when_it_listens_beyond_loopback(tmp_path):
    done = agentrio("serve", "--token", "short", "--model", "openai:x")
    assert (
        done.returncode == 2 and done.stderr == "agentrio: error: --token must have at least 16 characters\n"
    )
    banner, stderr = serve(tmp_path, "--host", "0.0.0.0", "--token", "a-token-long-enough")
    assert banner.startswith("agentrio console: http://0.0.0.0:") and "token=a-token-long-enough" in banner
    assert "agentrio: warning: serving on 0.0.0.0, beyond this machine, without encryption" in stderr
    _, stderr = serve(tmp_path)
    assert "warning" not in stderr


def test_serve_keeps_its_token_in_the_data_directory_across_restarts(tmp_path):
    first, _ = serve(tmp_path)
    second, _ = serve(tmp_path)
    token = first.split("token=")[1].strip()
    assert len(token) >= 16 and second.split("token=")[1].strip() == token
    kept = tmp_path / "data" / "agentrio" / "serve-token"
    assert kept.read_text().strip() == token and kept.stat().st_mode & 0o777 == 0o600
    given, _ = serve(tmp_path, "--token", "another-long-token")
    assert given.split("token=")[1].strip() == "another-long-token"
