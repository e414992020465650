"""``agentrio run --output-schema FILE``: the validated JSON on stdout, the
run's failure to give it as exit 5, an unusable FILE as exit 6."""

from __future__ import annotations

import json

import pytest

from agentrio.events import Event
from agentrio.messages import converter

from ..helpers import say

CITY = {
    "title": "City",
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
    "required": ["name", "population"],
    "additionalProperties": False,
}
PARIS = {"name": "Paris", "population": 2148000}


def schema_file(cli, schema, name: str = "city.json") -> str:
    path = cli.workspace / name
    path.write_text(schema if isinstance(schema, str) else json.dumps(schema))
    return name


async def run_typed(cli, schema_path: str, *options: str):
    return await cli.run("run", "Which city?", "--tools", "none", "--output-schema", schema_path, *options)


async def test_the_validated_json_is_the_one_line_on_stdout_and_the_request_asks_for_the_schema(cli):
    cli.server.add(say(json.dumps(PARIS, indent=2)))
    done = await run_typed(cli, schema_file(cli, CITY))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == json.dumps(PARIS) + "\n"
    # The transcript went to stderr, so stdout can be piped.
    assert "■ completed" in done.stderr.decode()
    response_format = cli.server.requests[0].body["response_format"]
    assert response_format["type"] == "json_schema"
    assert (
        response_format["json_schema"]["name"] == "City" and response_format["json_schema"]["strict"] is True
    )
    assert response_format["json_schema"]["schema"]["properties"] == CITY["properties"]


async def test_a_schema_whose_root_is_not_an_object_prints_the_bare_value(cli):
    cli.server.add(say('{"result": ["Paris", "Lyon"]}'))
    done = await run_typed(cli, schema_file(cli, {"type": "array", "items": {"type": "string"}}))
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == ["Paris", "Lyon"]


async def test_an_answer_that_does_not_fit_goes_back_with_the_error_then_the_next_one_is_printed(cli):
    cli.server.add(say('{"name": "Paris", "population": -1}'), say(json.dumps(PARIS)))
    done = await run_typed(cli, schema_file(cli, CITY))
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == PARIS
    second = cli.server.requests[1].body["messages"]
    assert [m["role"] for m in second[-3:]] == ["user", "assistant", "user"]
    assert second[-2]["content"] == '{"name": "Paris", "population": -1}'
    assert "population" in second[-1]["content"] and "minimum" in second[-1]["content"]


async def test_no_answer_that_fits_exits_5_and_says_why_on_stderr(cli):
    cli.server.add(*[say('{"name": "Paris"}')] * 3)
    done = await run_typed(cli, schema_file(cli, CITY))
    assert done.returncode == 5
    assert done.stdout == b""
    last = done.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("agentrio: no answer fit city.json: ") and "population" in last
    assert "■ output_invalid" in done.stderr.decode()
    assert len(cli.server.requests) == 3  # the first answer and its two retries


async def test_json_keeps_the_event_stream_and_marks_the_output_in_a_last_line(cli):
    cli.server.add(say("not json"), say(json.dumps(PARIS)))
    done = await run_typed(cli, schema_file(cli, CITY), "--json")
    assert done.returncode == 0, done.stderr.decode()
    *lines, last = done.stdout.decode().splitlines()
    assert json.loads(last) == {"type": "output", "output": PARIS}
    events = [converter.structure(json.loads(line), Event) for line in lines]
    types = [e.type for e in events if e.type in ("output_update", "message_end", "agent_end")]
    assert types[-1] == "agent_end" and events[-1].stop_reason == "completed"
    # The second answer streamed as output_update events, then ended.
    assert types[-3:] == ["output_update", "message_end", "agent_end"]
    assert [e.output for e in events if e.type == "output_update"][-1] == PARIS


async def test_json_with_no_answer_that_fits_exits_5_with_the_reason_on_stderr(cli):
    cli.server.add(*[say("[]")] * 3)
    done = await run_typed(cli, schema_file(cli, CITY), "--json")
    assert done.returncode == 5
    assert json.loads(done.stdout.decode().splitlines()[-1])["stop_reason"] == "output_invalid"
    new, why = done.stderr.decode().splitlines()
    assert new.startswith("new session ") and why.startswith("agentrio: no answer fit city.json: ")


@pytest.mark.parametrize(
    "schema, model, message",
    [
        (None, None, "--output-schema missing.json: no such file"),
        ('{"type": "object",', None, "--output-schema city.json: not JSON: "),
        (
            {"type": "strnig"},
            None,
            "--output-schema city.json: invalid output schema: 'strnig' is not valid under",
        ),
        (
            {"type": "object", "required": "name"},
            None,
            "invalid output schema: 'name' is not of type 'array'",
        ),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
            None,
            "$ref 'https://example.com/a.json' points to another document",
        ),
        (
            {"$ref": "#/$defs/Nowhere", "$defs": {}},
            None,
            "$ref '#/$defs/Nowhere' points to nothing in the schema",
        ),
        (
            {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
            "anthropic:fake",
            "Anthropic refuses oneOf at the top level of a tool's input_schema",
        ),
    ],
    ids=["missing", "not-json", "bad-type", "bad-keyword", "remote-ref", "dangling-ref", "provider-refuses"],
)
async def test_an_unusable_schema_is_one_line_and_exit_6_before_any_request(cli, schema, model, message):
    path = "missing.json" if schema is None else schema_file(cli, schema)
    options = ["--model", model, "--base-url", cli.server.base_url] if model else []
    done = await cli.run(
        "run", "Which city?", "--tools", "none", "--output-schema", path, *options, model=model is None
    )
    assert done.returncode == 6
    assert done.stdout == b""
    stderr = done.stderr.decode()
    assert stderr.count("\n") == 1 and stderr.startswith("agentrio: error: --output-schema ")
    assert message in stderr
    assert cli.server.requests == []


async def test_the_same_object_schema_with_a_combinator_is_taken_by_openai(cli):
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
    }
    cli.server.add(say('{"a": "x"}'))
    done = await run_typed(cli, schema_file(cli, schema))
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == {"a": "x"}
    assert cli.server.requests[0].body["response_format"]["json_schema"]["strict"] is False
