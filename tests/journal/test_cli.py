"""``agentrio sessions``: list, show, export and fork on a real store file."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys

import pytest
import trio

from agentrio import (
    AgentSpec,
    AssistantMessage,
    Runtime,
    ScriptedModel,
    SQLiteStore,
    Tool,
    ToolCall,
    Usage,
    agent_tool,
)
from agentrio.cli import main
from agentrio.cli.session_tree import session_tree, spawned_below
from agentrio.journal import SessionInfo, SessionSummary
from agentrio.journal.codec import decode_record
from agentrio.journal.fork import fork_session

from ..helpers import calls, echo_tool, say
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
                usage=Usage(100, 10, cost=0.0015),
            ),
            say("done", usage=Usage(50, 5, cost=0.0005)),
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


def columns(out: str, *, cost: bool = False) -> list[tuple[str, ...]]:
    """The lines of a listing cut where the header's columns start (cells
    are left-aligned under their heading), without the two timestamps and the
    title, and without the cost unless asked for."""
    header, *lines = out.splitlines()
    names = ["AGENT", "CREATED", "MESSAGES", "LAST ACTIVITY", "CHILDREN", "FORKS", "PARENT", "COST"]
    starts = [0, *(header.index(name) for name in names), header.index("TITLE")]
    rows = []
    for line in lines:
        cells = (line[a:b].rstrip() for a, b in itertools.pairwise(starts))
        id_, agent, _, messages, _, children, forks, parent, cost_ = cells
        rows.append((id_, agent, messages, children, forks, parent, *([cost_] if cost else [])))
    return rows


def test_list_shows_one_line_a_session(db, capsys):
    status, out, _ = run(capsys, "sessions", "list", "--db", str(db))
    assert status == 0
    assert out.splitlines()[0].split() == [
        "ID",
        "AGENT",
        "CREATED",
        "MESSAGES",
        "LAST",
        "ACTIVITY",
        "CHILDREN",
        "FORKS",
        "PARENT",
        "COST",
        "TITLE",
    ]
    # Forks sit under their parent, as a tree.
    main, fork, crashed = columns(out, cost=True)
    # What each session's requests cost: both answers of main (and of the
    # fork, which holds them); unknown where tokens had no price.
    assert main == ("main", "a", "7", "0", "1", "-", "$0.0020")
    assert fork[0].startswith("└─ session_")
    assert fork[1:] == ("a", "5", "0", "0", "fork of main (5 messages)", "$0.0020")
    assert crashed == ("crashed", "-", "2", "0", "0", "-", "-")


async def fill_family(db):
    """A lead whose agent spawned a worker (through a tool) and a helper,
    whose agent spawned another; a fork of the lead; and a session whose
    spawner is gone."""
    worker = AgentSpec("worker", ScriptedModel([say("done")]))
    lead = AgentSpec(
        "lead",
        ScriptedModel([calls(("ask", {"task": "t"})), say("top done")]),
        tools=[agent_tool(worker, name="ask", description="")],
    )
    async with Runtime(SQLiteStore(db)) as rt:
        agent = await rt.create(lead, "lead")
        await agent.run("go")
        helper = await rt.create(AgentSpec("helper", ScriptedModel([])), "helper", parent=agent)
        await rt.create(AgentSpec("deep", ScriptedModel([])), "deep", parent=helper)
        await fork_session(rt.store, "lead", at_message=4, fork_id="branch")
        await rt.store.create_session(SessionInfo("orphan", agent_name="worker", spawned_by="gone"))


@pytest.fixture
def family(tmp_path):
    path = tmp_path / "family.db"
    trio.run(fill_family, path)
    return path


def test_list_shows_child_agents_under_their_parent_with_names_and_counts(family, capsys):
    status, out, _ = run(capsys, "sessions", "list", "--db", str(family))
    assert status == 0
    rows = columns(out)
    worker = rows[1][0].removeprefix("├─ ")
    assert rows == [
        ("lead", "lead", "4", "2", "1", "-"),
        (f"├─ {worker}", "worker", "2", "0", "0", "child of lead"),
        ("├─ helper", "helper", "0", "1", "0", "child of lead"),
        ("│  └─ deep", "deep", "0", "0", "0", "child of helper"),
        ("└─ branch", "lead", "4", "0", "0", "fork of lead (4 messages)"),
        ("orphan", "worker", "0", "0", "0", "child of gone [deleted]"),
    ]


def test_list_as_json_carries_names_parents_and_children(family, capsys):
    status, out, _ = run(capsys, "sessions", "list", "--json", "--db", str(family))
    assert status == 0
    listed = [json.loads(line) for line in out.splitlines()]
    fields = ("session_id", "agent_name", "spawned_by", "parent_session_id", "seed_length", "messages")
    fields += ("children", "forks")
    worker = listed[0]["children"][0]
    assert [tuple(entry[field] for field in fields) for entry in listed] == [
        ("lead", "lead", None, None, 0, 4, [worker, "helper"], ["branch"]),
        (worker, "worker", "lead", None, 0, 2, [], []),
        ("helper", "helper", "lead", None, 0, 0, ["deep"], []),
        ("deep", "deep", "helper", None, 0, 0, [], []),
        ("branch", "lead", None, "lead", 4, 4, [], []),
        ("orphan", "worker", "gone", None, 0, 0, [], []),
    ]
    assert all(entry["updated_at"] >= entry["created_at"] > 0 for entry in listed)


def test_a_session_with_children_is_deleted_only_with_them(family, capsys):
    status, out, err = run(capsys, "sessions", "delete", "lead", "--db", str(family))
    assert status == 1 and out == ""
    worker = columns(run(capsys, "sessions", "list", "--db", str(family))[1])[1][0].removeprefix("├─ ")
    assert err == (
        f"agentrio: error: session lead has 3 child agent session(s) below it ({worker}, deep, helper): "
        "give --with-children to delete them too, or delete them first\n"
    )
    status, _, err = run(capsys, "sessions", "delete", "helper", "--with-children", "--db", str(family))
    assert status == 0
    assert err == f"deleted session deep from {family}\ndeleted session helper from {family}\n"
    status, _, err = run(capsys, "sessions", "delete", "lead", "--with-children", "--db", str(family))
    assert status == 0
    assert err == f"deleted session {worker} from {family}\ndeleted session lead from {family}\n"
    # The fork keeps its copy, now at the top with its source marked gone.
    _, out, _ = run(capsys, "sessions", "list", "--db", str(family))
    assert columns(out) == [
        ("branch", "lead", "4", "0", "0", "fork of lead (4 messages) [deleted]"),
        ("orphan", "worker", "0", "0", "0", "child of gone [deleted]"),
    ]


def test_delete_of_a_session_gone_already_leaves_the_children_that_name_it(family, capsys):
    status, _, err = run(capsys, "sessions", "delete", "gone", "--with-children", "--db", str(family))
    assert status == 1 and "no session 'gone'" in err
    # Records left without their session row are still deleted, children or not.
    with sqlite3.connect(family) as conn:
        conn.execute("DELETE FROM sessions WHERE session_id = 'lead'")
    conn.close()
    status, _, err = run(capsys, "sessions", "delete", "lead", "--db", str(family))
    assert status == 0 and err == f"deleted session lead from {family}\n"
    _, out, _ = run(capsys, "sessions", "list", "--db", str(family))
    assert [row[0] for row in columns(out)][-1] == "orphan" and len(columns(out)) == 5


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


TRANSCRIPT = """[N] numbers the messages: agentrio sessions fork main --at N keeps the first N

--- turn 1 ---
[1] user: first
[2] assistant:
      -> echo {"text": "line 1\\nline 2"} (c1)
      -> fail {} (c2)
[3]   <- echo (c1): echo: line 1
                    line 2
[4]   <- fail (c2) error: RuntimeError: disk on fire
[5] assistant: done
--- turn 1 ended: completed ---

--- turn 2 ---
[6] user: second
[7] assistant [max_tokens]: cut short
--- turn 2 ended: max_tokens ---

pending for the next step: for later
usage: 150 input, 15 output, 0 cache read, 0 cache write tokens · $0.0020
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
    indent = " " * len("[3]   <- echo (c9): ")
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
    assert any(line.startswith("└─ branch ") and "main (4 messages)" in line for line in out.splitlines())


def test_fork_with_repair_closes_the_open_turn_of_a_crashed_session(db, capsys):
    status, out, _ = run(
        capsys, "sessions", "fork", "crashed", "--at-turn", "1", "--repair", "--as", "mended", "--db", str(db)
    )
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
        check=False,
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
            [sys.executable, "-m", "agentrio", *argv], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 1 and f"no store at {missing}" in done.stderr


def test_the_tree_lists_every_session_once_even_from_a_damaged_store():
    def summary(session_id, **fields):
        return SessionSummary(SessionInfo(session_id, 1.0, **fields), 0, 1.0)

    # a and b name each other as spawner, which no runtime writes.
    summaries = [
        summary("a", spawned_by="b"),
        summary("b", spawned_by="a"),
        summary("c", spawned_by="a"),
        summary("d", parent_session_id="c", seed_length=0),
    ]
    nodes = session_tree(summaries)
    assert [(n.prefix + n.summary.info.session_id, n.children, n.forks, n.orphan) for n in nodes] == [
        ("a", ("b", "c"), (), False),
        ("├─ b", ("a",), (), False),
        ("└─ c", (), ("d",), False),
        ("   └─ d", (), (), False),
    ]
    assert spawned_below([s.info for s in summaries], "a") == ["b", "c"]
