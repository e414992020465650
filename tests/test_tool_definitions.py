from typing import Annotated, Literal

import pytest

from agentrio import Tool, ToolContext, ToolResult, tool
from agentrio.tools.decorator import parse_docstring


@tool
async def search(
    query: str,
    limit: int = 10,
    mode: Literal["fast", "exact"] = "fast",
    paths: list[str] | None = None,
    weight: Annotated[float, "How much recent files count."] = 1.0,
    ctx: ToolContext = None,
) -> str:
    """Search the workspace.

    Finds files by content.

    Args:
        query: What to look for,
            as a regular expression.
        limit: At most this many hits.
    """
    return f"{query} {limit} {mode} {paths} {weight} {ctx.tool_call_id}"


def test_schema_comes_from_the_signature_and_the_docstring():
    assert search.name == "search"
    assert search.description == "Search the workspace.\n\nFinds files by content."
    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, as a regular expression."},
            "limit": {"type": "integer", "description": "At most this many hits.", "default": 10},
            "mode": {"enum": ["fast", "exact"], "default": "fast"},
            "paths": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            "weight": {"type": "number", "description": "How much recent files count.", "default": 1.0},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert search.execution_mode == "parallel"


async def test_the_decorated_function_receives_arguments_and_context():
    ctx = ToolContext("agent", "session", "call_7", "search", report=lambda p: None)
    assert await search.execute({"query": "x"}, ctx) == "x 10 fast None 1.0 call_7"


def test_decorator_options():
    @tool(name="rm", description="Remove a file.", execution_mode="exclusive")
    async def remove(path: str) -> ToolResult:
        return ToolResult("gone")

    assert (remove.name, remove.description, remove.execution_mode) == ("rm", "Remove a file.", "exclusive")


def test_sphinx_docstrings():
    description, params = parse_docstring("""Do it.

    :param path: Where.
    :param int count: How many.
    """)
    assert description == "Do it."
    assert params == {"path": "Where.", "count": "How many."}


def test_decorator_refuses_what_it_cannot_describe():
    with pytest.raises(TypeError, match="async function"):
        tool(lambda: None)

    async def untyped(x):
        pass

    with pytest.raises(TypeError, match="'x' needs a type hint"):
        tool(untyped)

    async def variadic(*args: str):
        pass

    with pytest.raises(TypeError, match=r"\*args"):
        tool(variadic)


def test_argument_errors_name_the_failing_field():
    assert search.argument_errors({"query": "x"}) == []
    errors = search.argument_errors({"limit": "many", "mode": "slow", "extra": 1})
    assert errors == [
        "Additional properties are not allowed ('extra' was unexpected)",
        "'query' is a required property",
        "limit: 'many' is not of type 'integer'",
        "mode: 'slow' is not one of ['fast', 'exact']",
    ]


def test_nested_fields_are_named_by_their_path():
    t = Tool(
        "t",
        "",
        {
            "type": "object",
            "properties": {
                "edits": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"line": {"type": "integer"}}},
                }
            },
        },
        search.execute,
    )
    assert t.argument_errors({"edits": [{"line": 1}, {"line": "two"}]}) == [
        "edits.1.line: 'two' is not of type 'integer'"
    ]


def test_a_bad_tool_definition_is_a_clear_error():
    with pytest.raises(ValueError, match="parameters must be a JSON Schema of type 'object'"):
        Tool("t", "", {"type": "string"}, search.execute)
    with pytest.raises(ValueError, match="invalid parameters schema"):
        Tool("t", "", {"type": "object", "properties": {"x": {"type": "nonsense"}}}, search.execute)
    with pytest.raises(ValueError, match="execution_mode"):
        Tool("t", "", {"type": "object"}, search.execute, execution_mode="sometimes")


def test_execution_mode_may_depend_on_the_arguments():
    t = Tool(
        "bash",
        "",
        {"type": "object"},
        search.execute,
        execution_mode=lambda args: "parallel" if args.get("command", "").startswith("ls") else "exclusive",
    )
    assert t.mode_for({"command": "ls -la"}) == "parallel"
    assert t.mode_for({"command": "rm x"}) == "exclusive"
