"""The checks CI runs before the tests: lint, format and the strict type
check, each failing the run on a finding (``set -e``), with their settings
in pyproject.toml, and the package marked as typed for its users."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_ci_runs_the_linter_the_formatter_and_the_type_checker_before_the_tests() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    lines = script.splitlines()
    assert "set -euo pipefail" in lines
    install, tests = lines.index("pip install -e '.[test]' && agentrio demo"), lines.index("pytest")
    checks = [lines.index(check) for check in ("ruff check .", "ruff format --check .", "mypy")]
    assert all(install < n < tests for n in checks)


def test_the_type_checker_is_strict_over_the_package_and_the_tools_are_pinned() -> None:
    mypy = PYPROJECT["tool"]["mypy"]
    assert mypy["strict"] is True and mypy["files"] == ["agentrio"]
    pins = {d.split("==")[0]: d for d in PYPROJECT["project"]["optional-dependencies"]["test"] if "==" in d}
    assert {"mypy", "ruff"} <= set(pins)
    assert PYPROJECT["tool"]["ruff"]["lint"]["select"], "the rule set is stated, not ruff's default"


def test_the_package_says_it_is_typed() -> None:
    assert (ROOT / "agentrio" / "py.typed").is_file()
