"""``agentrio sessions``: list, show, export and fork on a real store file."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import trio

from agentrio import AgentSpec, AssistantMessage, Runtime, ScriptedModel, SQLiteStore, Tool, ToolCall, Usage
from agentrio.cli import main
from agentrio.journal import SessionInfo
from agentrio.journal.codec import decode_record

from ..helpers import echo_tool, say
from .processes import ROOT
from .records import tool_turn


async def fill(db):
    async def fail(args, ctx):
        raise RuntimeError("disk on fire")

    tools = [echo_tool(), Tool("fail", "Fails.", {"type": "object", "properties": {}}, fail)]
    model = ScriptedModel(
        [
            AssistantMessage(
                [ToolCall("c1", "echo", {"text": "line 1\nline 2"}), ToolCall("c2", "fail", {})],
                usage=Usage(100, 10),
            ),
            say("done", usage=Usage(50, 5)),
            say("cut short", stop_reason="max_tokens"),
        ]
    )
    async with Runtime(SQLiteStore(db)) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=tools), "main")
        await agent.run("first")
        await agent.run("second")
        await agent.inject("for later")
        await rt.fork("main", at_turn=1)
        # A session whose last turn never ended.
        await rt.store.create_session(SessionInfo("crashed"), tool_turn(1, 1)[:6])


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "cli.db"
    trio.run(fill, path)
    return path


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_list_shows_one_line_a_session(db, capsys):
    status, out, _ = run(capsys, "sessions", "list", "--db", str(db))
    assert status == 0
    header, *lines = out.splitlines()
    assert header.split() == ["ID", "CREATED", "MESSAGES", "LAST", "ACTIVITY", "FORKS", "PARENT"]
    # Forks sit under their parent, as a tree.
    assert lines[0].startswith("main ") and lines[1].startswith("└─ ")
    rows = {line.removeprefix("└─ ").split()[0]: line for line in lines}
    (fork_id,) = set(rows) - {"main", "crashed"}
    assert rows[fork_id].endswith("main (5 messages)")
    assert rows["main"].split()[3] == "7" and rows["main"].split()[6] == "1" and rows["main"].endswith("-")
    assert rows["crashed"].split()[3] == "2" and rows["crashed"].split()[6] == "0"


def test_delete_removes_a_session_and_leaves_its_forks(db, capsys):
    status, _, err = run(capsys, "sessions", "delete", "main", "--db", str(db))
    assert status == 0 and "deleted session main" in err
    status, _, err = run(capsys, "sessions", "show", "main", "--db", str(db))
    assert status == 1 and "no session 'main'" in err
    _, out, _ = run(capsys, "--db", str(db), "sessions", "list")
    ids = [line.split()[0] for line in out.splitlines()[1:]]
    assert "main" not in ids and "crashed" in ids and len(ids) == 2
    status, _, err = run(capsys, "sessions", "delete", "main", "--db", str(db))
    assert status == 1 and "no session 'main'" in err


TRANSCRIPT = """
--- turn 1 ---
user: first
assistant:
  -> echo {"text": "line 1\\nline 2"} (c1)
  -> fail {} (c2)
  <- echo (c1): echo: line 1
                line 2
  <- fail (c2) error: RuntimeError: disk on fire
assistant: done
--- turn 1 ended: completed ---

--- turn 2 ---
user: second
assistant [max_tokens]: cut short
--- turn 2 ended: max_tokens ---

pending for the next step: for later
usage: 150 input, 15 output, 0 cache read, 0 cache write tokens
"""


def test_show_is_a_readable_transcript(db, capsys):
    status, out, _ = run(capsys, "sessions", "show", "main", "--db", str(db))
    assert status == 0
    first, rest = out.split("\n", 1)
    assert first.startswith("session main, created ")
    assert rest == TRANSCRIPT


def test_show_cuts_long_results_unless_asked(db, capsys):
    async def long_result():
        model = ScriptedModel(
            [AssistantMessage([ToolCall("c9", "echo", {"text": "\n".join(map(str, range(30)))})]), say("ok")]
        )
        async with Runtime(SQLiteStore(db)) as rt:
            await (await rt.create(AgentSpec("a", model, tools=[echo_tool()]), "long")).run("go")

    trio.run(long_result)
    _, out, _ = run(capsys, "sessions", "show", "long", "--db", str(db))
    indent = " " * len("  <- echo (c9): ")
    assert f"{indent}11\n{indent}... 18 more lines (--full shows them)\n" in out
    _, out, _ = run(capsys, "sessions", "show", "long", "--full", "--db", str(db))
    assert "more lines" not in out and f"{indent}28\n{indent}29\n" in out


def test_show_says_a_turn_has_not_ended(db, capsys):
    _, out, _ = run(capsys, "sessions", "show", "crashed", "--db", str(db))
    assert "turn 1 has not ended" in out


def test_export_writes_the_journal_as_json_lines(db, capsys):
    status, out, _ = run(capsys, "sessions", "export", "main", "--db", str(db))
    assert status == 0
    records = [decode_record(line) for line in out.splitlines()]
    assert [json.loads(line)["type"] for line in out.splitlines()][:2] == ["inbox_spliced", "turn_started"]

    async def stored():
        async with SQLiteStore(db) as store:
            return (await store.load_session("main"))[1]

    assert records == trio.run(stored)


def test_fork_prints_the_new_session(db, capsys):
    status, out, err = run(capsys, "sessions", "fork", "main", "--at", "4", "--as", "branch", "--db", str(db))
    assert (status, out) == (0, "branch\n")
    assert "with 4 messages" in err
    _, out, _ = run(capsys, "sessions", "list", "--db", str(db))
    assert any(line.startswith("└─ branch ") and line.endswith("main (4 messages)") for line in out.splitlines())



def test_fork_with_repair_closes_the_open_turn_of_a_crashed_session(db, capsys):
    status, out, _ = run(capsys, "sessions", "fork", "crashed", "--at-turn", "1", "--repair", "--as", "mended", "--db", str(db))
    assert (status, out) == (0, "mended\n")
    _, out, _ = run(capsys, "sessions", "show", "mended", "--db", str(db))
    # The prompt, the call, and the result repair gives a call that never started.
    assert "user: go" in out and "-> echo" in out and "TOOL_NOT_STARTED" in out


@pytest.mark.parametrize(
    "argv, error",
    [
        (["show", "nope"], "no session 'nope' in "),
        (["fork", "main", "--at", "2"], "cut leaves tool calls without results"),
        (["fork", "crashed", "--at-turn", "1"], "the turn is still open"),
    ],
)
def test_errors_are_one_line_and_a_failing_status(db, capsys, argv, error):
    status, out, err = run(capsys, "sessions", *argv, "--db", str(db))
    assert status == 1 and out == ""
    assert err.startswith("agentrio: error: ") and error in err and "Traceback" not in err


def test_the_command_runs_as_a_program_and_never_creates_a_store(tmp_path):
    missing = tmp_path / "missing.db"
    done = subprocess.run(
        [sys.executable, "-m", "agentrio", "sessions", "list"],
        cwd=ROOT,
        env={"AGENTRIO_DB": str(missing), "PATH": "", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert done.stderr == f"agentrio: error: no store at {missing} (give --db, or set $AGENTRIO_DB)\n"
    assert not missing.exists()


def test_db_may_come_before_or_after_the_action(tmp_path):
    import subprocess
    import sys

    missing = tmp_path / "missing.db"
    for argv in (["sessions", "--db", str(missing), "list"], ["sessions", "list", "--db", str(missing)]):
        done = subprocess.run(
            [sys.executable, "-m", "agentrio", *argv], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 1 and f"no store at {missing}" in done.stderr
