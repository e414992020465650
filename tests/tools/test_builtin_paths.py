"""Every built-in tool stays inside its workspace root."""

import pytest

from agentrio.tools.builtin import Workspace, coding_tools
from agentrio.tools.builtin.common import ToolInputError

# For each path-taking tool, arguments that name a path, besides the path.
PATH_CALLS = {
    "read": {},
    "write": {"content": "x"},
    "edit": {"old_string": "secret", "new_string": "public"},
    "ls": {},
    "grep": {"pattern": "secret"},
    "glob": {"pattern": "*"},
}


def escapes(workspace):
    outside = workspace.parent / "outside"
    return {
        "dot-dot": "../outside/secret.txt",
        "absolute": str(outside / "secret.txt"),
        "symlinked-file": "secret-link.txt",
        "through-symlinked-folder": "link-out/secret.txt",
    }


@pytest.mark.parametrize("kind", ["dot-dot", "absolute", "symlinked-file", "through-symlinked-folder"])
@pytest.mark.parametrize("name", PATH_CALLS)
async def test_paths_leading_out_are_refused(workspace, call, name, kind):
    tool = next(t for t in coding_tools(workspace) if t.name == name)
    path = escapes(workspace)[kind]
    result = await call(tool, path=path, **PATH_CALLS[name])
    assert result.is_error
    assert "outside the workspace" in result.content and path in result.content
    assert (workspace.parent / "outside" / "secret.txt").read_text() == "secret\n"


def test_resolution_inside_the_root(workspace):
    ws = Workspace(workspace)
    (workspace / "src").mkdir()
    (workspace / "src" / "link-in").symlink_to(workspace / "src")
    assert ws.resolve("src/a.py") == ws.root / "src" / "a.py"
    assert ws.resolve(str(workspace / "src")) == ws.root / "src"
    assert ws.resolve("src/../src/link-in/b.py") == ws.root / "src" / "b.py"
    assert ws.resolve(".") == ws.root
    assert ws.show(ws.resolve(".")) == "."


def test_a_root_reached_through_a_symlink_is_its_real_location(tmp_path, workspace):
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    ws = Workspace(alias)
    assert ws.root == workspace.resolve()
    assert ws.resolve(str(alias / "a.txt")) == ws.root / "a.txt"


def test_refusals_name_the_path_and_the_root(workspace):
    with pytest.raises(ToolInputError) as refused:
        Workspace(workspace).resolve("../elsewhere")
    assert "'../elsewhere'" in str(refused.value) and str(workspace) in str(refused.value)


def test_the_root_must_be_a_directory(tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        Workspace(tmp_path / "missing")
