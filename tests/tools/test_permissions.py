import pytest

from agentrio import Tool, ToolCall
from agentrio.tools.builtin import coding_tools
from agentrio.tools.permissions import (
    Decision,
    Rule,
    allow,
    allow_all,
    ask,
    decide,
    deny,
    read_only,
    rules,
    summarize_call,
)


@pytest.fixture
def tools(workspace):
    return {t.name: t for t in coding_tools(workspace)}


def bash_call(command: str) -> ToolCall:
    return ToolCall("call-1", "bash", {"command": command})


async def test_allow_all(tools):
    for tool in tools.values():
        assert await decide(allow_all, ToolCall("c", tool.name, {}), tool) == "allow"


async def test_read_only_allows_looking_and_asks_for_changes(tools):
    verdicts = {name: await decide(read_only, ToolCall("c", name, {}), tool) for name, tool in tools.items()}
    assert verdicts == {
        "read": "allow",
        "ls": "allow",
        "grep": "allow",
        "glob": "allow",
        "write": "ask",
        "edit": "ask",
        "bash": "ask",
    }


async def test_read_only_reads_the_mode_for_the_arguments():
    async def run(args, ctx):
        return "done"

    tool = Tool(
        "db",
        "",
        {"type": "object"},
        run,
        execution_mode=lambda args: "parallel" if args.get("query") else "exclusive",
    )
    assert await decide(read_only, ToolCall("c", "db", {"query": "select"}), tool) == "allow"
    assert await decide(read_only, ToolCall("c", "db", {"update": "x"}), tool) == "ask"


@pytest.fixture
def policy():
    return rules(
        allow("bash", command="git status*"),
        allow("bash", command="git *"),
        ask("bash", command="git push*"),
        deny("bash", command="git push --force*", reason="no force pushes"),
        deny("bash", command="rm -rf *"),
        allow("read"),
        allow("g*"),
        default="ask",
    )


@pytest.mark.parametrize(
    ("command", "verdict"),
    [
        ("git status --short", "allow"),
        ("git log", "allow"),
        ("git push origin main", "ask"),
        ("git push --force origin main", "deny"),
        ("rm -rf /", "deny"),
        ("make test", "ask"),
    ],
)
async def test_rules_deny_first_then_ask_then_allow_then_default(tools, policy, command, verdict):
    assert await decide(policy, bash_call(command), tools["bash"]) == verdict


async def test_rules_give_reasons(tools, policy):
    forced = await decide(policy, bash_call("git push --force"), tools["bash"])
    assert forced.reason == "no force pushes"
    removal = await decide(policy, bash_call("rm -rf build"), tools["bash"])
    assert removal.reason == "matched the rule deny('bash', command='rm -rf *')"
    other = await decide(policy, bash_call("make"), tools["bash"])
    assert other.reason == "no rule matched bash; the default is ask"


async def test_rules_match_tool_names_by_glob(tools, policy):
    assert await decide(policy, ToolCall("c", "grep", {"pattern": "x"}), tools["grep"]) == "allow"
    assert await decide(policy, ToolCall("c", "edit", {}), tools["edit"]) == "ask"


def test_rule_arguments_must_all_match_and_be_present():
    rule = deny("write", path="*.env", content="*KEY*")
    assert rule.matches(ToolCall("c", "write", {"path": "prod.env", "content": "API_KEY=1"}))
    assert not rule.matches(ToolCall("c", "write", {"path": "prod.env", "content": "x"}))
    assert not rule.matches(ToolCall("c", "write", {"path": "prod.env"}))


def test_rule_matches_other_values_as_json():
    assert allow("edit", replace_all="true").matches(ToolCall("c", "edit", {"replace_all": True}))
    assert Rule("deny", "cancel", {"reason": "*fraud*"}).matches(
        ToolCall("c", "cancel", {"reason": "fraud suspected"})
    )


def test_rules_refuse_an_unknown_verdict():
    with pytest.raises(ValueError):
        rules(default="maybe")
    with pytest.raises(ValueError):
        Rule("sometimes", "bash")


async def test_decide_accepts_async_policies_and_plain_strings(tools):
    async def later(call, tool):
        return "deny"

    decision = await decide(later, bash_call("ls"), tools["bash"])
    assert isinstance(decision, Decision) and decision == "deny" and decision.reason is None


async def test_decide_refuses_an_answer_that_is_not_a_verdict(tools):
    with pytest.raises(ValueError, match="yes"):
        await decide(lambda call, tool: "yes", bash_call("ls"), tools["bash"])
    with pytest.raises(ValueError):
        await decide(lambda call, tool: True, bash_call("ls"), tools["bash"])


def test_a_decision_is_its_verdict():
    decision = Decision("deny", "because")
    assert decision == "deny" and decision.verdict == "deny" and decision.reason == "because"
    assert repr(decision) == "Decision('deny', reason='because')"


async def test_summary_of_a_bash_call_is_its_command(tools):
    assert await summarize_call(bash_call("git status"), tools["bash"]) == "git status"


async def test_summary_of_an_edit_is_its_diff_and_nothing_is_written(workspace, tools):
    (workspace / "a.txt").write_text("one\ntwo\n")
    call = ToolCall("c", "edit", {"path": "a.txt", "old_string": "two", "new_string": "2"})
    summary = await summarize_call(call, tools["edit"])
    assert summary == "Edit a.txt:\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
    assert (workspace / "a.txt").read_text() == "one\ntwo\n"


async def test_summary_of_a_write_that_creates(workspace, tools):
    call = ToolCall("c", "write", {"path": "new/b.txt", "content": "hi\nthere\n"})
    assert await summarize_call(call, tools["write"]) == "Create new/b.txt (9 bytes, 2 lines)"
    assert not (workspace / "new").exists()


async def test_summary_of_a_write_that_overwrites(workspace, tools):
    (workspace / "b.txt").write_text("old\n")
    call = ToolCall("c", "write", {"path": "b.txt", "content": "new\n"})
    summary = await summarize_call(call, tools["write"])
    assert (
        summary == "Overwrite b.txt (4 bytes, 1 line):\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-old\n+new\n"
    )
    (workspace / "blob").write_bytes(b"\x00\x01")
    call = ToolCall("c", "write", {"path": "blob", "content": "text"})
    assert (
        await summarize_call(call, tools["write"])
        == "Overwrite blob, not a text file (2 bytes), with 4 bytes, 1 line"
    )


async def test_summary_of_a_call_that_would_fail(workspace, tools):
    call = ToolCall("c", "edit", {"path": "missing.txt", "old_string": "a", "new_string": "b"})
    summary = await summarize_call(call, tools["edit"])
    assert summary == (
        'edit({"new_string": "b", "old_string": "a", "path": "missing.txt"})\n'
        "(no preview: missing.txt does not exist in the workspace)"
    )


async def test_summary_without_a_preview_shows_the_arguments(tools):
    call = ToolCall("c", "grep", {"pattern": "é", "path": "src"})
    assert await summarize_call(call, tools["grep"]) == 'grep({"path": "src", "pattern": "é"})'
    assert await summarize_call(call, None) == 'grep({"path": "src", "pattern": "é"})'
