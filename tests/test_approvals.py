"""Permission policies in the loop, and the approval flow."""

import pytest
import trio
import trio.lowlevel

from agentrio import AgentSpec, ScriptedModel, ToolResultMessage
from agentrio.tools.builtin import coding_tools
from agentrio.tools.permissions import allow, deny, read_only, rules

from .conftest import record
from .helpers import calls, echo_tool, say, start_run


async def _approve_with(rt, decision, reason=None, *, tools=None, model=None):
    """Run one batch whose first call needs approval, answer it, and return
    the agent, its recorder, the approval request and the run's result."""
    model = model or ScriptedModel(
        [calls(("echo", {"text": "risky"}), ("echo", {"text": "after"})), say("done")]
    )
    spec = AgentSpec(
        "a",
        model,
        tools=tools or [echo_tool()],
        permission=lambda call, tool: "ask" if call.arguments.get("text") == "risky" else "allow",
    )
    agent = await rt.create(spec)
    async with record(agent) as rec, trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "go")
        while not rec.of("approval_request"):
            await trio.lowlevel.checkpoint()
        request = rec.of("approval_request")[0]
        assert agent.pending_approvals == (request.request_id,)
        await agent.answer(request.request_id, decision, reason)
    return agent, rec, request, results[0]


def _results(agent):
    return [m for m in agent.messages if isinstance(m, ToolResultMessage)]


async def test_an_approved_call_runs(rt):
    agent, _rec, request, result = await _approve_with(rt, "approve")
    assert request.call.arguments == {"text": "risky"} and request.tool_name == "echo"
    assert [r.text for r in _results(agent)] == ["echo: risky", "echo: after"]
    assert result.stop_reason == "completed"
    assert agent.pending_approvals == ()


async def test_a_denied_call_gets_an_error_result_and_the_run_goes_on(rt):
    agent, _rec, _, result = await _approve_with(rt, "deny", "not on a Friday")
    first, second = _results(agent)
    assert first.is_error and first.text == "permission denied by the user: not on a Friday"
    assert second.text == "echo: after"
    assert result.stop_reason == "completed"


async def test_deny_and_stop_ends_the_run_and_runs_nothing_else(rt):
    agent, rec, _, result = await _approve_with(rt, "deny_and_stop")
    assert result.stop_reason == "permission_denied"
    first, second = _results(agent)
    assert "permission denied by the user, and the run stopped" in first.text
    assert second.is_error and "TOOL_NOT_STARTED" in second.text
    assert [e.tool_call_id for e in rec.of("tool_execution_start")] == [
        e.tool_call_id for e in rec.of("tool_execution_end")
    ]
    assert not any(e.result.text.startswith("echo") for e in rec.of("tool_execution_end"))


async def test_answer_refuses_unknown_requests_and_decisions(rt):
    agent = await rt.create(AgentSpec("a", ScriptedModel([])))
    with pytest.raises(LookupError, match="no pending approval request"):
        await agent.answer("approval_nope", "approve")
    with pytest.raises(ValueError, match="decision must be one of"):
        await agent.answer("approval_nope", "maybe")


async def test_the_approval_request_summarizes_what_the_call_would_do(rt, tmp_path):
    (tmp_path / "app.py").write_text("DEBUG = True\n")
    model = ScriptedModel(
        [
            calls(("edit", {"path": "app.py", "old_string": "DEBUG = True", "new_string": "DEBUG = False"})),
            calls(("bash", {"command": "git status"})),
            say("done"),
        ]
    )
    agent = await rt.create(AgentSpec("a", model, tools=coding_tools(tmp_path), permission=read_only))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "turn debug off")
        for expected in (1, 2):
            while len(rec.of("approval_request")) < expected:
                await trio.lowlevel.checkpoint()
            await agent.answer(rec.of("approval_request")[-1].request_id, "approve")
    edit_summary, bash_summary = [e.summary for e in rec.of("approval_request")]
    assert "-DEBUG = True" in edit_summary and "+DEBUG = False" in edit_summary
    assert "git status" in bash_summary
    assert (tmp_path / "app.py").read_text() == "DEBUG = False\n"


async def test_rules_deny_with_their_reason_without_asking(rt):
    policy = rules(allow("echo"), deny("echo", text="rm -rf *", reason="never delete trees"))
    model = ScriptedModel([calls(("echo", {"text": "rm -rf /"}), ("echo", {"text": "ls"})), say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], permission=policy))
    async with record(agent) as rec:
        await agent.run("go")
    denied, allowed = _results(agent)
    assert denied.is_error and denied.text == "permission denied by policy: never delete trees"
    assert allowed.text == "echo: ls"
    assert rec.of("approval_request") == []


async def test_a_policy_may_deny_and_stop_the_run(rt):
    """A call allowed before the refusal has started already (each call starts
    once its own check passes, dsh 7.9); nothing after it starts."""
    policy = rules(allow("echo"), deny("echo", text="rm -rf *", reason="never delete trees", stop=True))
    model = ScriptedModel(
        [calls(("echo", {"text": "ls"}), ("echo", {"text": "rm -rf /"}), ("echo", {"text": "pwd"}))]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], permission=policy))
    async with record(agent) as rec:
        result = await agent.run("go")
    assert result.stop_reason == "permission_denied"
    first, denied, never = _results(agent)
    assert first.text == "echo: ls"
    assert denied.text == "permission denied by policy, and the run stopped: never delete trees"
    assert never.is_error and "TOOL_NOT_STARTED" in never.text
    assert [r.error_code for r in (first, denied, never)] == [None, "PERMISSION_DENIED", "TOOL_NOT_STARTED"]
    assert [e.result.text for e in rec.of("tool_execution_end") if e.result.text.startswith("echo")] == [
        "echo: ls"
    ]
    assert rec.of("approval_request") == []


async def test_a_policy_that_fails_is_an_error_result(rt):
    def broken(call, tool):
        raise KeyError("config")

    model = ScriptedModel([calls(("echo", {"text": "x"})), say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], permission=broken))
    await agent.run("go")
    assert _results(agent)[0].text == "permission check failed: KeyError: 'config'"
