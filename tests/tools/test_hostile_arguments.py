"""Whatever a model sends — any JSON arguments, any regular expression, any
glob — a built-in tool answers with a result (maybe an error), never with an
exception, a hang or a frozen loop."""

import string

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrio.tools import ToolContext, ToolResult
from agentrio.tools.builtin import coding_tools, glob, grep
from agentrio.tools.regex import RegexError, compile_regex

_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=20,
)


@st.composite
def deep(draw):
    """A value nested up to 200 levels, in arrays and objects."""
    value = draw(_scalars)
    for _ in range(draw(st.integers(0, 200))):
        value = [value] if draw(st.booleans()) else {draw(st.text(max_size=3)): value}
    return value


_arguments = st.dictionaries(
    st.sampled_from(
        ["path", "content", "pattern", "old_string", "new_string", "offset", "limit", "glob", "command", "x"]
    ),
    _json | deep(),
    max_size=5,
)
# Regular expressions and globs made of the characters that matter to them.
_patterns = st.text(alphabet="a(+)*?|\\[]{}1,$^.!-/" + "bd", max_size=16)


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    (root / "a.txt").write_text("a" * 30 + "!\nbbb\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("aaa\n")
    return root, coding_tools(root)


@settings(max_examples=300, deadline=None)
@given(arguments=_arguments)
def test_argument_validation_answers_any_json_with_a_list_of_errors(tools, arguments):
    for tool in tools[1]:
        errors = tool.argument_errors(arguments)
        assert isinstance(errors, list) and all(isinstance(e, str) for e in errors)


@settings(max_examples=500, deadline=None)
@given(pattern=st.text(max_size=30) | _patterns)
def test_any_pattern_compiles_or_is_a_regex_error(pattern):
    try:
        regex = compile_regex(pattern)
    except RegexError as e:
        assert repr(pattern) in str(e)
    else:
        regex.search("a" * 40 + "!")


def run_tool(tool, args):
    ctx = ToolContext("agent", "session", "call", tool.name, report=lambda progress: None)

    async def main():
        with trio.fail_after(30):
            return await tool.execute(args, ctx)

    return trio.run(main)


@settings(max_examples=150, deadline=None)
@given(pattern=_patterns.filter(bool), ignore_case=st.booleans())
def test_grep_answers_any_pattern(tools, pattern, ignore_case):
    root, _ = tools
    result = run_tool(grep(root, ripgrep=False), {"pattern": pattern, "ignore_case": ignore_case})
    assert isinstance(result, (ToolResult, str))


@settings(max_examples=150, deadline=None)
@given(pattern=st.text(alphabet="*?[]!ab/." + string.digits, min_size=1, max_size=16))
def test_glob_answers_any_pattern(tools, pattern):
    root, _ = tools
    result = run_tool(glob(root), {"pattern": pattern})
    assert isinstance(result, (ToolResult, str))
