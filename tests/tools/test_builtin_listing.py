import os
import time

import pytest
import trio

from agentrio.tools.builtin import glob, listing, ls
from agentrio.tools.builtin.listing import MAX_ENTRIES


@pytest.fixture
def tree(workspace):
    for path in ["src/app.py", "src/util/io.py", "src/util/notes.md", "README.md", ".git/config", "a.py"]:
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text("x\n")
    return workspace


async def test_ls_lists_sorted_with_markers(tree, call):
    result = await call(ls(tree))
    assert result.content.splitlines() == [
        ".git/",
        "README.md",
        "a.py",
        f"link-out@ -> {tree.parent / 'outside'}",
        f"secret-link.txt@ -> {tree.parent / 'outside' / 'secret.txt'}",
        "src/",
    ]


async def test_ls_a_subfolder(tree, call):
    result = await call(ls(tree), path="src/util")
    assert result.content == "io.py\nnotes.md"


async def test_ls_caps_a_huge_folder(workspace, call):
    (workspace / "many").mkdir()
    for i in range(MAX_ENTRIES + 5):
        (workspace / "many" / f"f{i:05}").touch()
    lines = (await call(ls(workspace), path="many")).content.splitlines()
    assert len(lines) == MAX_ENTRIES + 1
    assert lines[-1] == "[... 5 more entries not shown]"


async def test_ls_an_empty_folder(workspace, call):
    (workspace / "empty").mkdir()
    assert (await call(ls(workspace), path="empty")).content == "empty is empty"


async def test_ls_missing_folder(workspace, call):
    result = await call(ls(workspace), path="nope")
    assert result.is_error and result.content == "nope does not exist in the workspace"


async def test_ls_a_file(tree, call):
    result = await call(ls(tree), path="a.py")
    assert result.is_error and "a.py is a file, not a directory" in result.content


async def test_glob_recursive_sorted_without_git(tree, call):
    result = await call(glob(tree), pattern="**/*.py")
    assert result.content == "a.py\nsrc/app.py\nsrc/util/io.py"


async def test_glob_marks_folders_and_searches_under_a_path(tree, call):
    result = await call(glob(tree), pattern="*", path="src")
    assert result.content == "src/app.py\nsrc/util/"


async def test_glob_does_not_follow_a_link_out(tree, call):
    result = await call(glob(tree), pattern="link-out/*")
    assert result.content == "No paths match 'link-out/*' in ."


async def test_glob_refuses_patterns_leading_up(tree, call):
    for pattern in ["../*", "/etc/*"]:
        result = await call(glob(tree), pattern=pattern)
        assert result.is_error and "must be relative" in result.content


async def test_glob_caps_many_paths(workspace, call):
    for i in range(MAX_ENTRIES + 3):
        (workspace / f"f{i:05}.txt").touch()
    lines = (await call(glob(workspace), pattern="*.txt")).content.splitlines()
    assert lines[0] == "f00000.txt"
    assert lines[-1] == "[... 3 more paths not shown; use a narrower pattern]"


async def test_glob_skips_git_itself(tree, call):
    result = await call(glob(tree), pattern="*")
    assert ".git/" not in result.content.splitlines()
    assert "src/" in result.content.splitlines()


async def test_glob_trailing_double_star_matches_everything_below(tree, call):
    result = await call(glob(tree), pattern="src/**")
    assert result.content == "src/app.py\nsrc/util/\nsrc/util/io.py\nsrc/util/notes.md"


async def test_glob_with_many_double_stars_visits_each_path_once(workspace, call):
    # A chain 40 folders deep: matching six "**" against it path by path,
    # as pathlib does, takes millions of directory listings.
    deep = workspace.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "zz").touch()
    result = await call(glob(workspace), pattern="**/**/**/**/**/**/zz")
    assert result.content == "/".join(["d"] * 40) + "/zz"


async def test_a_cancelled_glob_stops_walking_at_once(workspace, monkeypatch):
    for i in range(50):
        (workspace / f"dir{i:02}").mkdir()
    scans = []
    started = trio.Event()
    token = trio.lowlevel.current_trio_token()
    real_scandir = os.scandir

    def slow_scandir(path):
        scans.append(path)
        if len(scans) == 2:
            trio.from_thread.run_sync(started.set, trio_token=token)
        time.sleep(0.05)
        return real_scandir(path)

    monkeypatch.setattr(listing.os, "scandir", slow_scandir)
    tool = glob(workspace)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tool.execute, {"pattern": "**/zz"}, None)
            await started.wait()
            nursery.cancel_scope.cancel()
    assert len(scans) < 10  # of the 51 folders: the walk stopped soon after the cancel
