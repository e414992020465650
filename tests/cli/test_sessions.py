"""``agentrio sessions list`` and chat's ``/sessions`` on a store where an
agent spawned child agents, on a terminal."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore, agent_tool
from agentrio.journal import SessionInfo
from agentrio.journal.fork import fork_session
from agentrio.journal.records import MessageAppended
from agentrio.messages import AssistantMessage, Text, ToolCall, UserMessage


async def fill(db) -> str:
    """A lead whose agent asked a reviewer (a child agent) and a fork of it;
    the reviewer's session id."""
    reviewer = AgentSpec("reviewer", ScriptedModel([AssistantMessage([Text("Looks fine.")])]))
    lead = AgentSpec(
        "lead",
        ScriptedModel(
            [
                AssistantMessage([ToolCall("c1", "review", {"task": "Review calc.py"})]),
                AssistantMessage([Text("The reviewer says it looks fine.")]),
            ]
        ),
        tools=[agent_tool(reviewer, name="review", description="Ask for a review.")],
    )
    async with Runtime(SQLiteStore(db)) as rt:
        agent = await rt.create(lead, session_id="lead")
        await agent.run("Get calc.py reviewed.")
        await fork_session(rt.store, "lead", at_message=4, fork_id="retry")
        (child,) = [info for info in await rt.store.list_sessions() if info.spawned_by == "lead"]
    return child.session_id


async def test_list_draws_child_agents_and_forks_under_their_session(cli):
    child = await fill(cli.db)
    term = cli.spawn("sessions", "list", model=False)
    assert await term.wait() == 0
    lines = [line.rstrip() for line in term.text.splitlines() if line.strip()]
    assert lines[0].split() == [
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
    # id, agent, created, messages, last activity, children, forks, parent, cost, title
    at = r"\S+ \S+"
    assert re.fullmatch(rf"lead +lead +{at} +4 +{at} +1 +1 +- +- +Get calc.py reviewed.", lines[1])
    assert re.fullmatch(
        rf"├─ {child} +reviewer +{at} +2 +{at} +0 +0 +child of lead +- +Review calc.py", lines[2]
    )
    assert re.fullmatch(
        rf"└─ retry +lead +{at} +4 +{at} +0 +0 +fork of lead \(4 messages\) +- +Get calc.py reviewed.",
        lines[3],
    )
    assert len(lines) == 4


async def test_chat_sessions_draws_the_same_tree(cli):
    child = await fill(cli.db)
    term = cli.spawn("chat", "--session", "lead")
    await term.expect_text("/help for help")
    term.type_line("/sessions")
    await term.expect(r"\* lead  lead  4 messages  \S+ \S+  “Get calc.py reviewed.”")
    await term.expect(rf"├─ {child}  reviewer  2 messages  \S+ \S+  child of lead  “Review calc.py”")
    await term.expect(r"└─ retry  lead  4 messages  \S+ \S+  fork of lead \(4 messages\)")
    term.type_line("/quit")
    assert await term.wait() == 0


async def test_a_title_is_the_first_line_of_the_first_prompt_and_show_numbers_what_fork_at_takes(cli):
    cli.server.add(AssistantMessage([Text("First answer.")]), AssistantMessage([Text("Second answer.")]))
    term = cli.spawn("run", "Fix the parser\nIt fails on empty input.", "--session", "fix")
    assert await term.wait() == 0
    term = cli.spawn("run", "And the lexer?", "--session", "fix")
    assert await term.wait() == 0
    term = cli.spawn("sessions", "list", "--json", model=False)
    assert await term.wait() == 0
    assert '"title": "Fix the parser"' in term.text
    term = cli.spawn("sessions", "show", "fix", model=False)
    assert await term.wait() == 0
    assert "sessions fork fix --at N keeps the first N" in term.text
    for line in ("[1] user: Fix the parser", "[2] assistant: First answer.", "[3] user: And the lexer?"):
        assert line in term.text
    term = cli.spawn("sessions", "fork", "fix", "--at", "2", "--as", "retry", model=False)
    assert await term.wait() == 0
    term = cli.spawn("sessions", "show", "retry", model=False)
    assert await term.wait() == 0
    assert "[2] assistant: First answer." in term.text and "lexer" not in term.text


async def test_a_new_session_is_announced_and_resume_refuses_an_id_not_stored(cli):
    cli.server.add(AssistantMessage([Text("Hello.")]), AssistantMessage([Text("Again.")]))
    first = await cli.run("run", "hi", "--session", "mine")
    assert first.returncode == 0 and "new session mine\n" in first.stderr.decode()
    again = await cli.run("run", "hi", "--session", "mine")
    assert again.returncode == 0 and "new session" not in again.stderr.decode()
    typo = cli.spawn("chat", "--resume", "mnie")
    assert await typo.wait() == 2
    assert typo.text.strip() == (
        f"agentrio: error: no session 'mnie' in {cli.db} (agentrio sessions list shows them; "
        "--session ID starts a new one)"
    )
    term = cli.spawn("chat")
    await term.expect(r"new session (session_\S+)")
    await term.expect_text("/help for help")
    term.type_line("/quit")
    assert await term.wait() == 0
    assert len(cli.server.requests) == 2


@pytest.fixture
def read_only_copy(tmp_path):
    """A read-only view of a folder (a bind mount), where mounting is allowed."""
    source, view = tmp_path / "store", tmp_path / "read-only"
    source.mkdir()
    view.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(source), str(view)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")
    try:
        remounted = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(view)], capture_output=True, check=False
        )
        if remounted.returncode != 0:
            pytest.skip(f"cannot make a mount read-only here: {remounted.stderr.decode().strip()}")
        yield source, view
    finally:
        subprocess.run(["umount", str(view)], check=False)


async def test_a_store_on_a_read_only_filesystem_is_listed_shown_and_exported(cli, read_only_copy):
    source, view = read_only_copy
    async with SQLiteStore(source / "sessions.db") as store:
        await store.create_session(SessionInfo("kept"), [MessageAppended(UserMessage("Keep this."))])
    cli.db = view / "sessions.db"
    listed = await cli.run("sessions", "list", "--json", model=False)
    assert listed.returncode == 0, listed.stderr.decode()
    (row,) = [json.loads(line) for line in listed.stdout.decode().splitlines()]
    assert (row["session_id"], row["title"], row["messages"]) == ("kept", "Keep this.", 1)
    shown = await cli.run("sessions", "show", "kept", model=False)
    assert shown.returncode == 0 and "Keep this." in shown.stdout.decode()
    exported = await cli.run("sessions", "export", "kept", model=False)
    assert exported.returncode == 0 and "Keep this." in exported.stdout.decode()
    # Nothing was written beside it (no -wal, -shm or -locks), and writing is refused in one line.
    assert sorted(p.name for p in source.iterdir()) == ["sessions.db"]
    term = cli.spawn("sessions", "delete", "kept", model=False)
    assert await term.wait() == 1
    (line,) = [line for line in term.text.splitlines() if line.strip()]
    assert line.startswith(f"agentrio: error: {view / 'sessions.db'}: ")
    assert line.endswith(
        "(its folder is on a read-only filesystem: sessions list, show and export read it there, "
        "the other actions need a copy somewhere writable, given as --db)"
    )
