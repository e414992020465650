"""``agentrio run``: a prompt, a streamed transcript, an exit code."""

from __future__ import annotations

import json
import re

from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore
from agentrio.events import Event
from agentrio.journal.records import TurnEnded
from agentrio.messages import AssistantMessage, Text, ToolCall, Usage, converter

from ..fake_openai import HTTPError
from ..tools.processes import assert_all_gone, processes_with, sleepers, unique_duration, wait_for_sleeper


async def test_run_streams_text_and_tool_calls_and_exits_0_when_completed(cli):
    (cli.workspace / "notes.txt").write_text("first line\nsecond line\n")
    cli.server.add(
        AssistantMessage(
            [Text("Let me read the notes."), ToolCall("c1", "read", {"path": "notes.txt"})],
            usage=Usage(120, 15),
        ),
        AssistantMessage([Text("The notes have two lines.\nThat is all.")], usage=Usage(200, 9)),
    )
    term = cli.spawn("run", "What is in notes.txt?")
    await term.expect_text("Let me read the notes.")
    await term.expect(r"✓ read notes.txt")
    await term.expect(r"│ +1\s+first line")
    await term.expect_text("The notes have two lines.")
    await term.expect_text("That is all.")
    await term.expect(r"■ completed · 1 turn · 320 tokens in, 24 out")
    assert await term.wait() == 0
    # The tool's result went back to the model, after its call.
    last = cli.server.requests[1].body["messages"]
    assert [m["role"] for m in last[-3:]] == ["user", "assistant", "tool"]
    assert "second line" in last[-1]["content"]


async def test_a_run_of_a_priced_model_shows_what_it_cost(cli):
    cli.server.add(AssistantMessage([Text("Hello.")], usage=Usage(1_000_000, 100_000)))
    term = cli.spawn("run", "Hi", "--model", "openai:gpt-4.1", "--base-url", cli.server.base_url, model=False)
    # gpt-4.1: $2 a million tokens in, $8 a million out.
    await term.expect(r"■ completed · 1 turn · 1,000,000 tokens in, 100,000 out · \$2\.8000")
    assert await term.wait() == 0


async def test_ctrl_c_during_a_tool_exits_130_and_leaves_a_restorable_provider_valid_session(cli):
    cli.server.add(AssistantMessage([Text("Running it."), ToolCall("c1", "bash", {"command": "sleep 30"})]))
    term = cli.spawn("run", "Run the slow command.", "--permission", "allow", "--session", "slow")
    await term.expect(r"⠋ bash sleep 30")
    term.interrupt()
    await term.expect(r"■ aborted")
    assert await term.wait() == 130

    # The stored session restores, and its history is one a strict provider accepts.
    model = ScriptedModel([AssistantMessage([Text("Back again.")])], strict=True)
    async with SQLiteStore(cli.db) as store, Runtime(store) as rt:
        agent = await rt.create(AgentSpec("agentrio", model), session_id="slow")
        roles = [m.role for m in agent.messages]
        assert roles[:3] == ["user", "assistant", "tool_result"]
        assert agent.messages[2].is_error
        result = await agent.run("Are you there?")
    assert result.stop_reason == "completed"
    assert [m.role for m in model.requests[0].messages][-2:] == ["tool_result", "user"]


async def test_a_session_running_in_another_process_is_refused_in_one_line_with_exit_7_and_left_alone(cli):
    marker = unique_duration()
    call = ToolCall("c1", "bash", {"command": f"sleep {marker}"})
    cli.server.add(AssistantMessage([Text("Running it."), call]))
    first = cli.spawn("run", "Run the slow command.", "--permission", "allow", "--session", "shared")
    await first.expect(r"⠋ bash sleep")
    await wait_for_sleeper(marker)

    second = await cli.run("run", "Hello.", "--permission", "allow", "--session", "shared")
    assert second.returncode == 7
    assert re.fullmatch(
        rf"agentrio: error: session 'shared' is open for writing in another process "
        rf"\(pid {first.child.pid} on [^,]+, since [0-9: -]+\): a session has one writer at a time; "
        r"it can be read meanwhile, and opened once that writer ends\n",
        second.stderr.decode(),
    ), second.stderr.decode()
    assert len(cli.server.requests) == 1  # the second asked the model nothing
    # Reading it works meanwhile.
    shown = await cli.run("sessions", "show", "shared", model=False)
    assert shown.returncode == 0 and "Run the slow command." in shown.stdout.decode()

    # The first was left alone: its command still runs, and it ends as its person decides.
    assert sleepers(marker)
    first.interrupt()
    await first.expect(r"■ aborted")
    assert await first.wait() == 130
    assert_all_gone(processes_with(marker))
    cli.server.add(AssistantMessage([Text("Back again.")]))
    third = await cli.run("run", "Are you there?", "--permission", "allow", "--session", "shared")
    assert third.returncode == 0, third.stderr.decode()
    _, records = await _load(cli.db, "shared")
    assert [(r.turn, r.stop_reason) for r in records if isinstance(r, TurnEnded)] == [
        (1, "aborted"),
        (2, "completed"),
    ]


async def _load(db, session_id):
    async with SQLiteStore(db) as store:
        return await store.load_session(session_id)


async def test_a_limit_exits_3_and_a_model_error_exits_1(cli):
    (cli.workspace / "a.txt").write_text("a\n")
    looping = [AssistantMessage([ToolCall(f"c{i}", "read", {"path": "a.txt"})]) for i in range(3)]
    cli.server.add(*looping)
    term = cli.spawn("run", "Loop.", "--max-turns", "2")
    await term.expect(r"■ max_turns")
    assert await term.wait() == 3

    cli.server.add(HTTPError(400, "the model refused this request"))
    term = cli.spawn("run", "Fail.")
    await term.expect_text("the model refused this request")
    await term.expect(r"■ model_error")
    assert await term.wait() == 1


async def test_json_prints_one_event_a_line_that_round_trips_through_the_converter(cli):
    cli.server.add(AssistantMessage([Text("Hello there, in JSON.")], usage=Usage(5, 4)))
    term = cli.spawn("run", "Say hello.", "--json")
    assert await term.wait() == 0
    lines = [line for line in term.text.splitlines() if line.startswith("{")]
    events = [converter.structure(json.loads(line), Event) for line in lines]
    assert [converter.unstructure(e, Event) for e in events] == [json.loads(line) for line in lines]
    types = [e.type for e in events if e.type not in ("message_update", "state", "status", "inbox")]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert events[-1].stop_reason == "completed"
    assert "".join(
        e.delta.text for e in events if e.type == "message_update" and hasattr(e.delta, "text")
    ) == ("Hello there, in JSON.")


async def test_the_prompt_can_come_from_stdin_and_then_asking_refuses_clearly(cli):
    cli.server.add(
        AssistantMessage([ToolCall("c1", "write", {"path": "out.txt", "content": "x"})]),
        AssistantMessage([Text("I could not write it.")]),
    )
    term = cli.spawn("run", "-", stdin="Write out.txt please.")
    await term.expect_text("stdin is not a terminal: calls that need approval will be refused")
    await term.expect(r"✗ write out.txt")
    await term.expect_text("needs a person's approval and stdin is not a terminal")
    assert await term.wait() == 0
    assert not (cli.workspace / "out.txt").exists()
    assert cli.server.requests[0].body["messages"][-1]["content"] == "Write out.txt please."


CHOICES = "y yes · n no · a always: write, every call · s stop the run · d details"


async def test_ask_takes_yes_no_and_always_for_this_tool_on_one_key(cli):
    calls = [ToolCall(f"c{i}", "write", {"path": f"f{i}.txt", "content": str(i)}) for i in range(4)]
    cli.server.add(
        AssistantMessage([calls[0]]),
        AssistantMessage([calls[1]]),
        AssistantMessage([calls[2]]),
        AssistantMessage([calls[3]]),
        AssistantMessage([Text("Wrote what I was allowed to.")]),
    )
    term = cli.spawn("run", "Write four files.")
    await term.expect(r"\? allow write")
    await term.expect_text(CHOICES)
    term.send("\r")  # Enter is no answer: the question stays
    term.send("y")  # one key, no Enter
    await term.expect_text("write: allowed")
    await term.expect(r"✓ write f0.txt")
    await term.expect_text(CHOICES)
    term.send("n")
    await term.expect(r"✗ write f1.txt")
    await term.expect_text(CHOICES)
    term.send("a")
    await term.expect(r"✓ write f2.txt")
    await term.expect(r"✓ write f3.txt")  # not asked again
    await term.expect_text("Wrote what I was allowed to.")
    assert await term.wait() == 0
    assert sorted(p.name for p in cli.workspace.iterdir()) == ["f0.txt", "f2.txt", "f3.txt"]
    assert term.text.count(CHOICES) == 3


async def test_always_for_bash_holds_for_the_command_prefix_shown_and_never_for_a_compound_command(cli):
    (cli.workspace / "notes.txt").write_text("n\n")
    commands = ["ls -a", "ls -l", "ls && touch bad", "touch worse"]
    cli.server.add(
        *(AssistantMessage([ToolCall(f"c{i}", "bash", {"command": c})]) for i, c in enumerate(commands)),
        AssistantMessage([Text("Done listing.")]),
    )
    term = cli.spawn("run", "List the files.")
    await term.expect(r"\? allow bash: ls -a")
    await term.expect_text("a always: bash ls …")
    term.send("a")
    await term.expect(r"✓ bash ls -a")
    await term.expect(r"✓ bash ls -l")  # the prefix holds
    await term.expect(r"\? allow bash: ls && touch bad")  # a compound command is asked
    term.send("n")
    await term.expect(r"\? allow bash: touch worse")
    await term.expect_text("a always: bash touch …")
    term.send("n")
    await term.expect_text("Done listing.")
    assert await term.wait() == 0
    assert not (cli.workspace / "bad").exists() and not (cli.workspace / "worse").exists()
    assert term.text.count("? allow bash") == 3


async def test_session_continues_a_stored_session(cli):
    cli.server.add(AssistantMessage([Text("Noted: the colour is teal.")]))
    term = cli.spawn("run", "Remember: the colour is teal.", "--session", "memo")
    assert await term.wait() == 0
    cli.server.add(AssistantMessage([Text("It is teal.")]))
    term = cli.spawn("run", "Which colour?", "--session", "memo")
    await term.expect_text("It is teal.")
    assert await term.wait() == 0
    contents = [m.get("content") for m in cli.server.requests[1].body["messages"]]
    assert contents[-3:] == ["Remember: the colour is teal.", "Noted: the colour is teal.", "Which colour?"]


async def test_a_missing_api_key_is_one_line_before_any_request(cli):
    term = cli.spawn(
        "run", "Hello.", model=False, env={"AGENTRIO_MODEL": "openai:gpt-4.1", "OPENAI_API_KEY": ""}
    )
    assert await term.wait() == 1
    assert (
        term.text.strip() == "agentrio: error: OPENAI_API_KEY is not set: it is needed for 'openai:gpt-4.1'"
    )
    assert cli.server.requests == []


async def test_stop_at_an_approval_ends_the_run_with_exit_4(cli):
    cli.server.add(AssistantMessage([ToolCall("c1", "bash", {"command": "rm -rf build"})]))
    term = cli.spawn("run", "Clean up.")
    await term.expect(r"\? allow bash: ")
    await term.expect_text("a always: bash rm … · s stop the run")
    term.send("s")
    await term.expect(r"■ permission_denied")
    assert await term.wait() == 4
    assert len(cli.server.requests) == 1


async def test_escape_sequences_from_the_model_or_a_tool_are_shown_not_obeyed(cli):
    (cli.workspace / "evil.txt").write_text("\x1b[2Jcleared?\n")
    cli.server.add(
        AssistantMessage([Text("Look: \x1b[31mred\x1b[0m."), ToolCall("c1", "read", {"path": "evil.txt"})]),
        AssistantMessage([Text("Done.")]),
    )
    term = cli.spawn("run", "Show me.")
    await term.expect_text("Look: ␛[31mred␛[0m.")
    await term.expect_text("␛[2Jcleared?")
    assert await term.wait() == 0
    assert "\x1b[2J" not in term.raw and "\x1b[31mred" not in term.raw


async def test_ctrl_c_while_a_question_waits_cancels_the_run(cli):
    cli.server.add(AssistantMessage([ToolCall("c1", "bash", {"command": "make install"})]))
    term = cli.spawn("run", "Install it.", "--session", "asked")
    await term.expect_text("s stop the run · d details")
    term.interrupt()
    await term.expect(r"■ aborted")
    assert await term.wait() == 130
    # The call that was being asked about is answered in history: a strict provider takes it.
    model = ScriptedModel([AssistantMessage([Text("ok")])], strict=True)
    async with SQLiteStore(cli.db) as store, Runtime(store) as rt:
        agent = await rt.create(AgentSpec("agentrio", model), session_id="asked")
        assert (await agent.run("next")).stop_reason == "completed"


async def test_a_long_tool_shows_a_live_status_line_with_its_time_and_the_tokens_so_far(cli):
    cli.server.add(
        AssistantMessage(
            [Text("Waiting."), ToolCall("c1", "bash", {"command": "sleep 2"})], usage=Usage(120, 15)
        ),
        AssistantMessage([Text("Waited.")], usage=Usage(200, 9)),
    )
    term = cli.spawn("run", "Wait a bit.", "--permission", "allow")
    # While the tool runs: its line with its time so far, and the run's status
    # line with the time and the tokens of the reply that asked for it.
    spinner = "[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]"
    await term.expect(rf"{spinner} bash sleep 2 1\.\ds\n{spinner} working \d+\.\ds · 120 tokens in, 15 out")
    await term.expect(r"✓ bash sleep 2  [2-9]\.\ds")
    await term.expect(r"■ completed · 1 turn · 320 tokens in, 24 out")
    assert await term.wait() == 0


async def test_a_result_is_cut_to_its_first_lines_and_full_shows_all_of_it(cli):
    (cli.workspace / "ten.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    for options in ((), ("--full",)):
        cli.server.add(
            AssistantMessage([ToolCall("c1", "read", {"path": "ten.txt"})]), AssistantMessage([Text("Read.")])
        )
        term = cli.spawn("run", "Read ten.txt.", *options)
        await term.expect(r"✓ read ten.txt")
        assert await term.wait() == 0
        shown = [int(n) for n in re.findall(r"│ +\d+\s+line (\d+)", term.text)]
        if options:
            assert shown == list(range(1, 11)) and "more lines" not in term.text
        else:
            assert shown == [1, 2, 3]
            assert "│ … 7 more lines (--full shows them)" in term.text


async def test_tools_none_offers_no_tools_and_read_only_refuses_side_effects_in_cwd(cli, tmp_path):
    cli.server.add(AssistantMessage([Text("No tools here.")]))
    term = cli.spawn("run", "Hello.", "--tools", "none")
    assert await term.wait() == 0
    assert "tools" not in cli.server.requests[0].body

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "plan.txt").write_text("the plan\n")
    cli.server.add(
        AssistantMessage(
            [
                ToolCall("c1", "read", {"path": "plan.txt"}),
                ToolCall("c2", "write", {"path": "x.txt", "content": "x"}),
            ]
        ),
        AssistantMessage([Text("Read it; could not write.")]),
    )
    term = cli.spawn("run", "Read and write.", "--cwd", str(elsewhere), "--permission", "read-only")
    await term.expect(r"✓ read plan.txt")
    await term.expect(r"✗ write x.txt")
    await term.expect_text("write has side effects and this session is read-only")
    assert await term.wait() == 0
    assert [p.name for p in elsewhere.iterdir()] == ["plan.txt"]
    assert not (cli.workspace / "x.txt").exists()
    assert "the plan" in cli.server.requests[2].body["messages"][-2]["content"]


async def test_with_the_prompt_on_the_terminal_a_missing_key_is_said_before_it_is_typed(cli):
    term = cli.spawn("run", "-", model=False, env={"AGENTRIO_MODEL": "openai:gpt-4.1", "OPENAI_API_KEY": ""})
    await term.expect_text("agentrio: error: OPENAI_API_KEY is not set", timeout=10)
    assert await term.wait() == 1
    term = cli.spawn("run", "-", "--output-schema", "missing.json")
    await term.expect_text("agentrio: error: --output-schema missing.json: no such file", timeout=10)
    assert await term.wait() == 6
    assert cli.server.requests == []


async def test_a_search_is_summed_up_by_its_pattern_and_where_it_looks(cli):
    (cli.workspace / "src").mkdir()
    (cli.workspace / "src" / "a.py").write_text("# TODO: fix\n")
    cli.server.add(
        AssistantMessage(
            [
                ToolCall("c1", "grep", {"pattern": "TODO", "path": "src"}),
                ToolCall("c2", "glob", {"pattern": "**/*.py"}),
            ]
        ),
        AssistantMessage([Text("One TODO.")]),
    )
    term = cli.spawn("run", "Find the TODOs.")
    await term.expect(r"✓ grep TODO in src  ")
    await term.expect(r"✓ glob \*\*/\*\.py  ")
    assert await term.wait() == 0


async def test_a_run_that_stops_short_says_how_to_go_on_and_the_command_it_gives_works(cli):
    (cli.workspace / "a.txt").write_text("a\n")
    cli.server.add(AssistantMessage([ToolCall("c1", "read", {"path": "a.txt"})]))
    stopped = await cli.run("run", "Read a.txt.", "--max-turns", "1", "--session", "work")
    assert stopped.returncode == 3
    assert stopped.stderr.decode().splitlines()[-1] == (
        "agentrio: it used its 1 model requests: continue with: agentrio run --resume work 'continue' "
        "(raise --max-turns for longer runs)"
    )
    # The advised command, as printed, continues the session.
    cli.server.add(AssistantMessage([Text("It says a.")]))
    went_on = await cli.run("run", "--resume", "work", "continue")
    assert went_on.returncode == 0
    assert went_on.stderr.decode().splitlines()[-1] == "session work (continue it with --resume work)"
    roles = [m["role"] for m in cli.server.requests[1].body["messages"]]
    contents = [m.get("content") for m in cli.server.requests[1].body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user", "user"]
    assert (contents[1], contents[-1]) == ("Read a.txt.", "continue")

    cli.server.add(HTTPError(400, "the model refused this request"))
    failed = await cli.run("run", "Again.", "--resume", "work", "--json")
    assert failed.returncode == 1
    assert failed.stderr.decode().splitlines()[-1] == (
        "agentrio: the model request failed: continue with: agentrio run --resume work 'continue' "
        "(check --model and --base-url if it fails again)"
    )
