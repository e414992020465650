"""``agentrio mcp``'s mistakes: one line on stderr, exit status 1."""

import socket

import pytest

from agentrio.cli import main


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "agentrio: error: --spec takes MODULE:ATTR, got 'nope'"),
        (
            "tests.mcp_serve.agents:reply",
            "agentrio: error: --spec tests.mcp_serve.agents:reply is neither an AgentSpec nor a list of them",
        ),
        (
            "tests.mcp_serve.absent:X",
            "agentrio: error: --spec tests.mcp_serve.absent:X: No module named 'tests.mcp_serve.absent'",
        ),
    ],
)
def test_a_spec_that_cannot_be_loaded_is_one_line_and_status_1(spec, message, capsys):
    assert main(["mcp", "--spec", spec]) == 1
    assert capsys.readouterr().err == message + "\n"


def test_a_port_in_use_is_one_line_and_status_1(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["mcp", "--spec", "tests.mcp_serve.agents:AGENTS", "--http", str(port)]) == 1
    assert (
        capsys.readouterr().err
        == f"agentrio: error: cannot serve on 127.0.0.1:{port}: Address already in use\n"
    )
