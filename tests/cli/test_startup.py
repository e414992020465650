"""Start-up: ``import agentrio`` and ``agentrio --version`` load only what
they need (which modules, not how long: timings vary from machine to machine)."""

from __future__ import annotations

import json
import subprocess
import sys

import agentrio

from .conftest import ROOT

#: Modules that must wait until a program uses what needs them.
HEAVY = (
    "trio",
    "httpx",
    "rich",
    "jsonschema",
    "agentrio.actors",
    "agentrio.models",
    "agentrio.journal",
    "agentrio.gateway",
    "agentrio.tools",
    "agentrio.supervisors",
)


def _loaded(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    return json.loads(done.stdout.splitlines()[-1])


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(HEAVY) and m.partition(".")[0] in ("agentrio", *HEAVY)]


def test_import_agentrio_loads_none_of_its_parts():
    loaded = _loaded("import agentrio")
    assert _heavy(loaded) == []
    assert [m for m in loaded if m.startswith("agentrio")] == ["agentrio"]


def test_the_version_is_told_before_any_command_is_loaded():
    loaded = _loaded("from agentrio.cli import main\nassert main(['-V']) == 0")
    assert _heavy(loaded) == []
    assert "agentrio.cli.run" not in loaded and "agentrio.cli.options" not in loaded


def test_every_public_name_is_there_on_first_use():
    assert sorted(agentrio.__all__) == sorted(agentrio._WHERE)
    for name in agentrio.__all__:
        assert getattr(agentrio, name) is not None, name
    assert set(agentrio.__all__) <= set(dir(agentrio))
    namespace: dict = {}
    exec("from agentrio import *", namespace)  # what a user's star import gets
    assert set(agentrio.__all__) <= set(namespace)


def test_a_command_loads_its_own_module_and_not_the_others():
    argv = ["--db", "x.db", "sessions", "list"]
    loaded = _loaded(f"from agentrio.cli import build_parser\nbuild_parser({argv!r}).parse_args({argv!r})")
    assert "agentrio.cli.sessions" in loaded
    for part in (
        "agentrio.cli.run",
        "agentrio.cli.chat",
        "agentrio.models",
        "agentrio.actors",
        "agentrio.gateway",
    ):
        assert part not in loaded
    assert not [m for m in loaded if m.startswith("rich")]
