"""The README is the front page: what agentrio is, the two Quick start
commands (exactly these, and .ci/run runs the same ones), one complete
example, and links to the documentation, each to a page that exists.

Its example runs in tests/test_docs.py with every other example; the pages
it links to are checked there too."""

import json
import re
import shlex
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from .test_docs import _shell_env, block, fenced

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_quick_start_is_two_commands_and_ci_runs_them() -> None:
    commands = [line for line in block("README.md", "Quick start", "sh").splitlines() if line.strip()]
    assert commands == ["pip install -e '.[test]' && agentrio demo", "pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert all(command in ci.splitlines() for command in commands)


def test_ci_builds_the_docs_strictly_between_the_install_and_the_tests() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    (build,) = [n for n, line in enumerate(lines) if re.search(r"\bmkdocs build --strict\b", line)]
    assert lines.index("pip install -e '.[test]' && agentrio demo") < build < lines.index("pytest")


def test_the_quick_start_installs_this_tree_and_runs_the_demo(tmp_path: Path) -> None:
    """The first command: its ``pip install`` is checked rather than run (it
    would reinstall the package under the running suite): the extra it names
    exists and this tree is what is installed, editable. Its ``agentrio demo``
    runs as written. The second command, ``pytest``, is the one running this."""
    quick_start = block("README.md", "Quick start", "sh").splitlines()
    install, demo = quick_start[0].split(" && ")
    pip, verb, editable, target = shlex.split(install)
    assert (pip, verb, editable, target) == ("pip", "install", "-e", ".[test]")
    assert "test" in PYPROJECT["project"]["optional-dependencies"]
    installed = json.loads(metadata.distribution("agentrio").read_text("direct_url.json") or "{}")
    assert installed["dir_info"].get("editable") and Path(installed["url"].removeprefix("file://")) == ROOT
    done = subprocess.run(
        ["/bin/sh", "-c", demo],
        check=False,
        cwd=tmp_path,
        env=_shell_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "run completed" in done.stdout and "final calc.py:" in done.stdout
    assert quick_start[1] == "pytest" and PYPROJECT["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]


def test_the_readme_is_a_front_page() -> None:
    """A few lines of what it is, the Quick start, one example of about 20
    lines (whole, and run by tests/test_docs.py), and links."""
    blocks = fenced(ROOT / "README.md")
    assert [(b.language, b.title) for b in blocks] == [("sh", ""), ("python", "hello.py")]
    code = [line for line in blocks[1].body.splitlines() if line.strip()]
    assert len(code) <= 22, len(code)
    assert len(README.splitlines()) < 100


def test_every_link_of_the_readme_and_the_docs_names_a_file_that_exists() -> None:
    """Relative links, as GitHub follows them from the README and mkdocs
    (strictly, in .ci/run) from the pages; the README links every guide."""
    linked = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README)
    assert linked and all((ROOT / target).is_file() for target in linked), linked
    guides = {f"docs/guides/{page.name}" for page in (ROOT / "docs" / "guides").glob("*.md")}
    assert guides <= set(linked)
    for page in (ROOT / "docs").rglob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).is_file(), (page, target)


def test_the_python_running_the_suite_has_the_docs_tools() -> None:
    """The test extra brings what CI needs to build the site."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "--version"], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    test_extra = PYPROJECT["project"]["optional-dependencies"]["test"]
    for requirement in PYPROJECT["project"]["optional-dependencies"]["docs"]:
        assert requirement in test_extra
