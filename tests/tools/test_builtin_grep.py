"""grep through ripgrep and through the Python fallback: same answers."""

import shutil
import sys

import pytest

from agentrio.tools.builtin import grep, searching

needs_ripgrep = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep (rg) is not on PATH")
ENGINES = [pytest.param(True, marks=needs_ripgrep, id="ripgrep"), pytest.param(False, id="python")]


@pytest.fixture(params=ENGINES)
def ripgrep(request):
    return request.param


@pytest.fixture
def tree(workspace):
    files = {
        "a.txt": "foo 1\nbar\n",
        "a/b.txt": "foo 2\n",
        ".hidden/h.txt": "foo hidden\n",
        ".git/config": "foo in git\n",
        "sub/c.py": "x\nFOO upper\nfoo late\n",
        "sub/deep/d.txt": "foo deep\n",
        "crlf.txt": "foo\r\n",
    }
    for path, text in files.items():
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_bytes(text.encode())
    (workspace / "bin.dat").write_bytes(b"foo\x00binary\n")
    (workspace / "latin.txt").write_bytes(b"\xff foo\n")
    (workspace / "sub" / "link.txt").symlink_to(workspace / "a.txt")
    return workspace


async def test_matches_in_path_order(tree, call, ripgrep):
    result = await call(grep(tree, ripgrep=ripgrep), pattern="foo")
    assert not result.is_error
    assert result.content.splitlines() == [
        ".hidden/h.txt:1:foo hidden",
        "a/b.txt:1:foo 2",
        "a.txt:1:foo 1",
        "crlf.txt:1:foo",
        "latin.txt:1:\ufffd foo",
        "sub/c.py:3:foo late",
        "sub/deep/d.txt:1:foo deep",
    ]


@pytest.mark.parametrize(
    ("glob", "expected"),
    [
        ("*.py", ["sub/c.py:3:foo late"]),
        ("sub/**", ["sub/c.py:3:foo late", "sub/deep/d.txt:1:foo deep"]),
        ("sub/*.txt", []),
        ("**/deep/*.txt", ["sub/deep/d.txt:1:foo deep"]),
        (
            "!sub",
            [
                ".hidden/h.txt:1:foo hidden",
                "a/b.txt:1:foo 2",
                "a.txt:1:foo 1",
                "crlf.txt:1:foo",
                "latin.txt:1:\ufffd foo",
            ],
        ),
        ("[ab].txt", ["a/b.txt:1:foo 2", "a.txt:1:foo 1"]),
    ],
)
async def test_glob_filter(tree, call, ripgrep, glob, expected):
    result = await call(grep(tree, ripgrep=ripgrep), pattern="foo", glob=glob)
    assert not result.is_error
    assert result.content.splitlines() == (expected or ["No matches for 'foo' in ."])


async def test_a_path_and_ignore_case(tree, call, ripgrep):
    result = await call(grep(tree, ripgrep=ripgrep), pattern="^foo", path="sub", ignore_case=True)
    assert result.content.splitlines() == [
        "sub/c.py:2:FOO upper",
        "sub/c.py:3:foo late",
        "sub/deep/d.txt:1:foo deep",
    ]


async def test_a_single_file(tree, call, ripgrep):
    result = await call(grep(tree, ripgrep=ripgrep), pattern=r"\d", path="a/b.txt")
    assert result.content == "a/b.txt:1:foo 2"


async def test_no_match(tree, call, ripgrep):
    result = await call(grep(tree, ripgrep=ripgrep), pattern="zebra")
    assert not result.is_error and result.content == "No matches for 'zebra' in ."


async def test_many_matches_stop_at_the_limit_with_a_note(workspace, call, ripgrep):
    for i in range(30):
        (workspace / f"f{i:02}.txt").write_text("hit\n" * 10)
    result = await call(grep(workspace, ripgrep=ripgrep, max_matches=25), pattern="hit")
    lines = result.content.splitlines()
    assert lines[:25] == [f"f{i // 10:02}.txt:{i % 10 + 1}:hit" for i in range(25)]
    assert lines[25] == "[... stopped at 25 matches; more follow: narrow the pattern, the path or the glob]"


async def test_long_lines_are_cut(workspace, call, ripgrep):
    (workspace / "min.js").write_text("x" * 1000 + "needle\n")
    result = await call(grep(workspace, ripgrep=ripgrep), pattern="needle")
    assert result.content.endswith("x [... 706 more characters]")


async def test_invalid_regular_expression(tree, call, ripgrep):
    result = await call(grep(tree, ripgrep=ripgrep), pattern="foo(")
    assert result.is_error and "foo(" in result.content


async def test_missing_path(tree, call, ripgrep):
    result = await call(grep(tree, ripgrep=ripgrep), pattern="foo", path="nope")
    assert result.is_error and result.content == "nope does not exist in the workspace"


@needs_ripgrep
async def test_ripgrep_is_used_when_installed(tree, call, monkeypatch):
    def python_search(search):
        raise AssertionError("the Python search ran")

    monkeypatch.setattr(searching, "search_python", python_search)
    assert (await call(grep(tree), pattern="foo 2")).content == "a/b.txt:1:foo 2"


@pytest.mark.parametrize(
    "pattern", [r"(a)\1", "foo(?= 2)", "(?<=x)foo"], ids=["backreference", "look-ahead", "look-behind"]
)
async def test_patterns_that_need_backtracking_are_refused_by_both_engines(tree, call, ripgrep, pattern):
    result = await call(grep(tree, ripgrep=ripgrep), pattern=pattern)
    assert result.is_error


async def test_a_catastrophic_pattern_runs_in_linear_time(workspace, call, ripgrep):
    # With a backtracking engine, (a+)+$ against 40 "a" and a "!" takes
    # about 2**40 steps and freezes every task while it runs.
    (workspace / "evil.txt").write_text("a" * 40 + "!\n" + "a" * 40 + "\n")
    result = await call(grep(workspace, ripgrep=ripgrep), pattern="(a+)+$")
    assert result.content == "evil.txt:2:" + "a" * 40


async def test_a_catastrophic_glob_runs_in_linear_time(workspace, call):
    name = "a" * 200 + ".txt"
    (workspace / name).write_text("needle\n")
    result = await call(grep(workspace, ripgrep=False), pattern="needle", glob="*a*a*a*a*a*a*a*a*a*a*a*a*b")
    assert result.content.startswith("No matches")


async def test_the_python_search_refuses_a_pattern_too_large_to_run(workspace, call):
    (workspace / "a.txt").write_text("a\n")
    result = await call(grep(workspace, ripgrep=False), pattern="((a{1000}){1000}){1000}")
    assert result.is_error and "invalid regular expression" in result.content


#: How deep the tree of the next test is, and the recursion limit while it
#: is searched: a walk that recursed once per folder would fail. (The tree
#: stays shallow enough for shutil.rmtree, which pytest uses on old
#: temporary folders and which does recurse.)
DEPTH, RECURSION_LIMIT = 400, 300


async def test_a_tree_deeper_than_the_recursion_limit_is_searched(workspace, call, ripgrep):
    deep = workspace
    for _ in range(DEPTH):
        deep = deep / "d"
        deep.mkdir()
    (deep / "needle.txt").write_text("needle\n")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        result = await call(grep(workspace, ripgrep=ripgrep), pattern="needle")
    finally:
        sys.setrecursionlimit(limit)
    assert result.content == "/".join(["d"] * DEPTH) + "/needle.txt:1:needle"
