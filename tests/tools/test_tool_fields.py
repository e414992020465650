"""Every field of a Tool is checked when it is made (and when it is changed):
a mistake is a TypeError or ValueError naming the field, what it expects and
what it got, never an AttributeError deep inside a run."""

import functools

import pytest

from agentrio.tools import Tool

OBJECT = {"type": "object"}


async def execute(args, ctx):
    return "ok"


def make(**changes):
    fields = {"name": "t", "description": "", "parameters": OBJECT, "execute": execute} | changes
    options = {k: fields.pop(k) for k in ("execution_mode", "preview") if k in fields}
    return Tool(fields["name"], fields["description"], fields["parameters"], fields["execute"], **options)


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"name": 3}, TypeError, "Tool.name: expected a str, got 'int'"),
        ({"name": "my tool"}, ValueError, "Tool.name: expected 1 to 64 letters, digits, '_' or '-'"),
        ({"name": ""}, ValueError, "Tool.name: expected 1 to 64 letters"),
        ({"name": "x" * 65}, ValueError, "Tool.name: expected 1 to 64 letters"),
        ({"name": "read.file"}, ValueError, "got 'read.file'; rename the tool"),
        ({"description": None}, TypeError, "Tool.description: expected a str"),
        (
            {"parameters": [1]},
            TypeError,
            "Tool.parameters: expected a JSON Schema of type 'object', as a dict, got 'list'",
        ),
        (
            {"parameters": {"type": "string"}},
            ValueError,
            "Tool.parameters of 't': parameters must be a JSON Schema of type 'object'",
        ),
        (
            {"parameters": {"type": "object", "properties": {"x": {"type": "nonsense"}}}},
            ValueError,
            "Tool.parameters['properties']['x']['type'] of 't': invalid parameters schema",
        ),
        (
            {"parameters": {"type": "object", "required": "x"}},
            ValueError,
            "Tool.parameters['required'] of 't': invalid",
        ),
        ({"execute": 3}, TypeError, "Tool.execute: expected an async function (args, ctx), got 'int'"),
        (
            {"execute": lambda args, ctx: "ok"},
            TypeError,
            "Tool.execute: expected an async function (args, ctx), got a function that is not async",
        ),
        ({"execute": lambda: None}, TypeError, "Tool.execute: expected an async function"),
        (
            {"execution_mode": "sometimes"},
            ValueError,
            "Tool.execution_mode: expected one of ('parallel', 'exclusive') or a function (args) -> mode, got 'sometimes'",
        ),
        (
            {"execution_mode": 1},
            TypeError,
            "Tool.execution_mode: expected one of ('parallel', 'exclusive') or a function (args) -> mode, got 'int'",
        ),
        (
            {"preview": "diff"},
            TypeError,
            "Tool.preview: expected a function (args) -> str, sync or async, or None, got 'str'",
        ),
    ],
)
def test_a_wrong_field_is_named_with_what_it_expects(changes, error, message):
    with pytest.raises(error) as raised:
        make(**changes)
    assert message in str(raised.value)


async def takes_three(args, ctx, extra):
    return "ok"


def test_an_execute_that_cannot_take_args_and_ctx_is_refused():
    with pytest.raises(TypeError, match="cannot take those two arguments"):
        make(execute=takes_three)


class AsyncCallable:
    async def __call__(self, args, ctx):
        return "ok"


async def with_prefix(prefix, args, ctx):
    return prefix


@pytest.mark.parametrize(
    "fn",
    [execute, AsyncCallable(), functools.partial(with_prefix, "p")],
    ids=["function", "callable-object", "partial"],
)
def test_async_callables_of_every_kind_are_accepted(fn):
    assert make(execute=fn).execute is fn


def test_names_providers_accept_are_accepted():
    assert make(name="a-Z_09" + "x" * 58).name == "a-Z_09" + "x" * 58


def test_a_field_changed_later_is_checked_too():
    t = make()
    with pytest.raises(ValueError, match="Tool.execution_mode"):
        t.execution_mode = "sometimes"
    with pytest.raises(ValueError, match="Tool.parameters"):
        t.parameters = {"type": "string"}
    assert t.execution_mode == "parallel" and t.parameters == OBJECT


def test_the_spec_a_model_sees_follows_every_change():
    t = make(parameters={"type": "object", "properties": {}})
    spec = t.spec
    assert t.spec is spec  # (read for every request: made once)
    t.parameters["properties"]["x"] = {"type": "integer"}  # changed in place
    assert t.spec.parameters == {"type": "object", "properties": {"x": {"type": "integer"}}}
    t.description = "new words"
    t.name = "renamed"
    t.parameters = {"type": "object"}
    assert (t.spec.name, t.spec.description, t.spec.parameters) == (
        "renamed",
        "new words",
        {"type": "object"},
    )
