"""A person's mistakes on the command line: one line each, with the exit code
the command documents (2 for usage), never a traceback; in a real terminal."""

from __future__ import annotations

import pytest
import trio

from agentrio.messages import AssistantMessage, Text


def _one_line(term) -> str:
    # The line that says which sandbox an agent command's tools run in is not the mistake.
    lines = [line for line in term.text.splitlines() if line.strip() and "sandbox" not in line]
    assert len(lines) == 1, term.text
    assert "Traceback" not in term.text
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "status", "said"),
    [
        (
            ["serve", "--port", "-5"],
            2,
            "agentrio serve: error: argument --port: -5 is not a port: give 0 to 65535",
        ),
        (["serve", "--port", "99999"], 2, "argument --port: 99999 is not a port"),
        (
            ["serve", "--host", "nosuch.invalid"],
            1,
            "agentrio: error: cannot serve on nosuch.invalid: no such host",
        ),
        (["serve", "--host", "192.0.2.1"], 1, "agentrio: error: cannot serve on 192.0.2.1:8765: "),
        (["run", ""], 2, "agentrio: error: the prompt is empty"),
        (
            ["run", "hi", "--max-turns", "0"],
            2,
            "agentrio run: error: argument --max-turns: must be 1 or more, got 0",
        ),
        (["run", "hi", "--port"], 2, "agentrio: error: unrecognized arguments: --port"),
    ],
)
async def test_a_mistake_is_one_line_and_its_exit_code(cli, argv, status, said):
    term = cli.spawn(*argv)
    assert await term.wait() == status
    assert said in _one_line(term)
    assert cli.server.requests == []


async def test_a_base_url_that_is_no_url_is_refused_before_any_request(cli):
    with trio.fail_after(5):  # not retried: refused at once
        term = cli.spawn("run", "hi", "--model", "openai:fake", "--base-url", "notaurl", model=False)
        assert await term.wait() == 2
    assert _one_line(term) == (
        "agentrio: error: base URL 'notaurl' is not an http:// or https:// address (e.g. http://localhost:8000/v1)"
    )


async def test_serving_on_a_port_in_use_says_so(cli):
    with trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        term = cli.spawn("serve", "--port", str(port))
        assert await term.wait() == 1
    assert _one_line(term) == f"agentrio: error: cannot serve on 127.0.0.1:{port}: Address already in use"


async def test_a_fork_onto_an_existing_session_is_a_usage_error(cli):
    cli.server.add(AssistantMessage([Text("One.")]), AssistantMessage([Text("Two.")]))
    for session in ("first", "second"):
        assert await cli.spawn("run", "hi", "--session", session).wait() == 0
    term = cli.spawn("sessions", "fork", "first", "--at", "1", "--as", "second", model=False)
    assert await term.wait() == 2
    assert _one_line(term) == (
        f"agentrio: error: session 'second' already exists in {cli.db}: give --as an id not taken"
    )


async def test_switching_provider_with_model_drops_the_base_url_unless_one_is_given(cli):
    term = cli.spawn("chat")
    await term.expect_text("/help for help")
    # The fake server's URL was for openai: anthropic would need its key, not that URL.
    term.type_line("/model anthropic:claude-x")
    await term.expect_text("ANTHROPIC_API_KEY is not set")
    term.type_line(f"/model anthropic:claude-x {cli.server.base_url}")
    await term.expect_text("model: anthropic:claude-x")
    term.type_line("/model openai:other notaurl")
    await term.expect_text("base URL 'notaurl' is not an http:// or https:// address")
    term.type_line("/quit")
    assert await term.wait() == 0


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("run", "Exit codes: 0 the run completed"),
        ("chat", "The line is edited as in a shell"),
        ("sessions", "Exit codes: 0 done"),
        ("config", "Where a command's settings come from, in layers"),
        ("acp", "speaks the Agent Client Protocol over its stdin"),
        ("serve", "It prints the console's address"),
        ("demo", "A scripted model plays a small coding task"),
    ],
)
async def test_every_command_has_help_text(cli, command, says):
    term = cli.spawn(command, "--help", model=False)
    assert await term.wait() == 0
    assert says in " ".join(term.text.split())


async def test_dash_v_is_the_version(cli):
    term = cli.spawn("-V", model=False)
    assert await term.wait() == 0
    assert term.text.startswith("agentrio ")
