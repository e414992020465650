"""``agentrio chat`` driven by a person at a terminal."""

from __future__ import annotations

import os
import re

import trio

from agentrio import SQLiteStore
from agentrio.journal import SessionInfo
from agentrio.messages import AssistantMessage, Text, ToolCall, Usage

from ..fake_openai import FakeRequest, Hang

ESC = "\x1b"


def _last_user(request: FakeRequest) -> str:
    return [m for m in request.body["messages"] if m["role"] == "user"][-1]["content"]


async def test_a_line_typed_while_the_agent_works_steers_it_and_a_double_chevron_queues_a_follow_up(cli):
    (cli.workspace / "a.txt").write_text("alpha\n")
    gate = trio.Event()

    async def after_the_gate(request: FakeRequest) -> AssistantMessage:
        await gate.wait()
        return AssistantMessage([Text("Reading a."), ToolCall("c1", "read", {"path": "a.txt"})])

    cli.server.add(
        after_the_gate,
        AssistantMessage([Text("Read a, and b as you asked.")]),
        AssistantMessage([Text("Summary: all read.")], usage=Usage(50, 5)),
    )
    term = cli.spawn("chat")
    await term.expect_text("/help for help")
    term.type_line("Read a.txt")
    await cli.server.wait_for(lambda: len(cli.server.requests) == 1)
    term.type_line("also check b")
    await term.expect_text("↳ queued steer: also check b")
    term.type_line(">> then summarize")
    await term.expect_text("↳ queued follow-up: then summarize")
    gate.set()
    await term.expect_text("Read a, and b as you asked.")
    await term.expect_text("Summary: all read.")
    await term.expect(r"■ completed")
    # The steer joined the turn right after the tool's result; the follow-up came in a turn of its own.
    steered = cli.server.requests[1].body["messages"]
    assert [m["role"] for m in steered[-3:]] == ["assistant", "tool", "user"]
    assert steered[-1]["content"] == "also check b"
    assert _last_user(cli.server.requests[2]) == "then summarize"
    assert cli.server.requests[2].body["messages"][-2]["content"] == "Read a, and b as you asked."
    term.type_line("/quit")
    assert await term.wait() == 0


async def test_esc_cancels_the_turn_and_keeps_the_history_and_twice_quits(cli):
    cli.server.add(Hang(AssistantMessage([Text("Thinking about it at length")])))
    term = cli.spawn("chat", "--session", "esc")
    await term.expect_text("/help for help")
    term.type_line("Take your time.")
    await term.expect_text("Thinking about it at length")
    term.send(ESC)
    await term.expect(r"■ aborted")
    await cli.server.wait_for(lambda: cli.server.disconnects == 1)
    cli.server.add(AssistantMessage([Text("Fresh start.")]))
    term.type_line("Again, quickly.")
    await term.expect_text("Fresh start.")
    await term.expect(r"■ completed")
    assert [m["role"] for m in cli.server.requests[1].body["messages"]][-1:] == ["user"]
    assert _last_user(cli.server.requests[1]) == "Again, quickly."
    term.send(ESC)
    await term.expect_text("press Esc or Ctrl-C again to quit")
    term.send(ESC)
    await term.expect_text("continue it with agentrio chat --resume esc")
    assert await term.wait() == 0


async def test_an_approval_is_answered_inline(cli):
    cli.server.add(
        AssistantMessage([ToolCall("c1", "write", {"path": "hello.txt", "content": "hi\n"})]),
        AssistantMessage([Text("Wrote hello.txt.")]),
    )
    term = cli.spawn("chat", "--permission", "ask")
    await term.expect_text("/help for help")
    term.type_line("Write hello.txt")
    await term.expect(r"\? allow write: Create hello.txt")
    await term.expect_text("y yes · n no · a always: write, every call · s stop the run · d details")
    term.send("y")
    await term.expect(r"✓ write hello.txt")
    await term.expect_text("Wrote hello.txt.")
    assert (cli.workspace / "hello.txt").read_text() == "hi\n"
    term.type_line("/quit")
    assert await term.wait() == 0


async def test_a_stored_session_is_resumed_with_its_history(cli):
    cli.server.add(AssistantMessage([Text("Noted: teal.")], usage=Usage(30, 3)))
    term = cli.spawn("chat", "--session", "memo")
    await term.expect_text("/help for help")
    term.type_line("The colour is teal.")
    await term.expect_text("Noted: teal.")
    term.type_line("/quit")
    assert await term.wait() == 0

    cli.server.add(AssistantMessage([Text("It was teal.")]))
    term = cli.spawn("chat")
    await term.expect_text("/help for help")
    term.type_line("/sessions")
    await term.expect(r"memo  agentrio  2 messages")
    term.type_line("/resume memo")
    # A recap of where the session was, then the conversation goes on.
    await term.expect_text("› The colour is teal.")
    await term.expect_text("Noted: teal.")
    await term.expect_text("resumed session memo (2 messages)")
    term.type_line("Which colour?")
    await term.expect_text("It was teal.")
    term.type_line("/usage")
    await term.expect(r"session memo: 30 input, 3 output")
    term.type_line("/quit")
    assert await term.wait() == 0
    contents = [m["content"] for m in cli.server.requests[1].body["messages"] if m["role"] != "system"]
    assert contents == ["The colour is teal.", "Noted: teal.", "Which colour?"]


async def test_fork_clear_and_model_switch_the_session_the_chat_talks_to(cli):
    cli.server.add(*(AssistantMessage([Text(f"Answer {i}.")]) for i in range(1, 6)))
    term = cli.spawn("chat", "--session", "base")
    await term.expect_text("/help for help")
    for i, line in enumerate(("one", "two"), 1):
        term.type_line(line)
        await term.expect_text(f"Answer {i}.")
        await term.expect(r"■ completed")
    term.type_line("/fork 2")
    forked = await term.expect(r"forked base into (\S+) with its first 2 messages")
    term.type_line("three")
    await term.expect_text("Answer 3.")
    await term.expect(r"■ completed")
    term.type_line("/clear")
    await term.expect(r"new session \S+")
    term.type_line("four")
    await term.expect_text("Answer 4.")
    await term.expect(r"■ completed")
    term.type_line("/model openai:other")
    await term.expect_text("model: openai:other")
    term.type_line("five")
    await term.expect_text("Answer 5.")
    term.type_line("/nope")
    await term.expect_text("unknown command /nope; /help lists them")
    term.interrupt()
    term.interrupt()
    await term.expect(r"continue it with agentrio chat --resume \S+")
    assert await term.wait() == 0

    def history(n: int) -> list[str]:
        return [m["content"] for m in cli.server.requests[n].body["messages"] if m["role"] != "system"]

    assert history(2) == ["one", "Answer 1.", "three"]
    assert history(3) == ["four"]
    assert history(4) == ["four", "Answer 4.", "five"]
    assert [r.body["model"] for r in cli.server.requests] == ["fake"] * 4 + ["other"]
    assert forked.group(1) != "base"


SPINNER = "[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]"


async def test_parallel_tool_calls_show_running_side_by_side_then_done_with_their_time(cli, tmp_path):
    # A slow ripgrep: each grep call takes two seconds.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rg").write_text("#!/bin/sh\nsleep 2\nexit 1\n")
    (bin_dir / "rg").chmod(0o755)
    cli.server.add(
        AssistantMessage(
            [ToolCall("c1", "grep", {"pattern": "alpha"}), ToolCall("c2", "grep", {"pattern": "beta"})]
        ),
        AssistantMessage([Text("Neither is there.")]),
    )
    term = cli.spawn("chat", env={"PATH": f"{bin_dir}:{cli.env['PATH']}"})
    await term.expect_text("/help for help")
    term.type_line("Look for alpha and beta.")
    # Both are drawn running at once, a second into each...
    await term.expect(rf"{SPINNER} grep alpha [1-9]\.\ds\n{SPINNER} grep beta [1-9]\.\ds\n")
    # ...then each line is replaced by its result, with its time.
    await term.expect(r"✓ grep alpha  [2-9]\.\ds")
    await term.expect(r"✓ grep beta  [2-9]\.\ds")
    await term.expect_text("Neither is there.")
    await term.expect(r"■ completed")
    term.type_line("/quit")
    assert await term.wait() == 0


async def test_ctrl_c_once_cancels_the_turn_and_the_chat_goes_on(cli):
    cli.server.add(Hang(AssistantMessage([Text("Going on and on")])), AssistantMessage([Text("Short now.")]))
    term = cli.spawn("chat")
    await term.expect_text("/help for help")
    term.type_line("Tell me everything.")
    await term.expect_text("Going on and on")
    term.interrupt()
    await term.expect(r"■ aborted")
    await cli.server.wait_for(lambda: cli.server.disconnects == 1)
    term.type_line("Briefly, then.")
    await term.expect_text("Short now.")
    await term.expect(r"■ completed")
    # The cancelled reply's text stayed in history, before the new line.
    contents = [m.get("content") for m in cli.server.requests[1].body["messages"] if m["role"] != "system"]
    assert contents == ["Tell me everything.", "Going on and on", "Briefly, then."]
    term.type_line("/quit")
    assert await term.wait() == 0


async def test_session_resumes_a_stored_chat_with_a_recap_and_help_lists_the_commands(cli):
    cli.server.add(AssistantMessage([Text("Noted: the door code is 4711.")]))
    term = cli.spawn("chat", "--session", "door")
    await term.expect_text("/help for help")
    term.type_line("The door code is 4711.")
    await term.expect_text("Noted: the door code is 4711.")
    term.type_line("/quit")
    await term.expect_text("continue it with agentrio chat --resume door")
    assert await term.wait() == 0

    cli.server.add(AssistantMessage([Text("It is 4711.")]))
    term = cli.spawn("chat", "--resume", "door")
    await term.expect_text("agentrio chat · session door")
    await term.expect_text("› The door code is 4711.")
    await term.expect_text("Noted: the door code is 4711.")
    term.type_line("/help")
    for command in ("/help", "/sessions", "/resume ID", "/fork N", "/usage", "/model", "/clear", "/quit"):
        await term.expect_text(command)
    term.type_line("What is the code?")
    await term.expect_text("It is 4711.")
    term.type_line("/quit")
    assert await term.wait() == 0
    contents = [m["content"] for m in cli.server.requests[1].body["messages"] if m["role"] != "system"]
    assert contents == ["The door code is 4711.", "Noted: the door code is 4711.", "What is the code?"]


async def test_a_missing_api_key_is_one_line_before_the_chat_opens(cli):
    term = cli.spawn("chat", model=False, env={"AGENTRIO_MODEL": "anthropic:claude-sonnet-4-5"})
    assert await term.wait() == 1
    assert (
        term.text.strip()
        == "agentrio: error: ANTHROPIC_API_KEY is not set: it is needed for 'anthropic:claude-sonnet-4-5'"
    )
    assert cli.server.requests == []


async def test_a_session_open_in_another_process_is_one_line_and_exit_7(cli):
    async with SQLiteStore(cli.db) as store:
        await store.create_session(SessionInfo("shared"))
        await store.claim_session("shared")  # this test's process holds it
        term = cli.spawn("chat", "--session", "shared")
        assert await term.wait() == 7
    assert re.fullmatch(
        rf"agentrio: error: session 'shared' is open for writing in another process \(pid {os.getpid()} "
        r"on [^,]+, since [0-9: -]+\): a session has one writer at a time; it can be read meanwhile, "
        r"and opened once that writer ends",
        term.text.strip(),
    ), term.text
    assert cli.server.requests == []


async def test_resume_of_a_session_open_elsewhere_says_so_and_the_chat_goes_on(cli):
    cli.server.add(AssistantMessage([Text("Still here.")]))
    async with SQLiteStore(cli.db) as store:
        await store.create_session(SessionInfo("elsewhere"))
        await store.claim_session("elsewhere")
        term = cli.spawn("chat", "--session", "mine")
        await term.expect_text("/help for help")
        term.type_line("/resume elsewhere")
        await term.expect_text("cannot resume it: session 'elsewhere' is open for writing in another process")
        term.type_line("Are you there?")
        await term.expect_text("Still here.")
        term.type_line("/quit")
        await term.expect_text("continue it with agentrio chat --resume mine")
        assert await term.wait() == 0


LEFT, RIGHT, HOME, END, UP, DOWN = "\x1b[D", "\x1b[C", "\x1b[H", "\x1b[F", "\x1b[A", "\x1b[B"
CTRL_A, CTRL_E, CTRL_K, CTRL_U, CTRL_W, CTRL_R = "\x01", "\x05", "\x0b", "\x15", "\x17", "\x12"


def _sent(cli) -> list[str]:
    return [_last_user(request) for request in cli.server.requests]


async def test_the_line_is_edited_with_arrows_home_end_and_readline_keys(cli):
    cli.server.add(*(AssistantMessage([Text(f"Answer {i}.")]) for i in range(1, 4)))
    term = cli.spawn("chat")
    await term.expect_text("/help for help")
    # abc ←← X → aXbc; Home, then "<", End, then ">".
    term.send("abc" + LEFT + LEFT + "X" + HOME + "<" + END + ">\r")
    await term.expect_text("Answer 1.")
    await term.expect(r"■ completed")
    # Ctrl-W drops the word before the cursor, Ctrl-U the line before it, Ctrl-K the rest.
    term.send("first second third" + CTRL_W + "last" + CTRL_A + CTRL_K + "kept " + CTRL_E + " end\r")
    await term.expect_text("Answer 2.")
    await term.expect(r"■ completed")
    term.send("throw this away" + CTRL_U + "only this\r")
    await term.expect_text("Answer 3.")
    await term.expect(r"■ completed")
    assert _sent(cli) == ["<aXbc>", "kept  end", "only this"]
    term.type_line("/quit")
    assert await term.wait() == 0


async def test_a_bracketed_paste_is_one_message_and_lines_continue_with_alt_enter_or_a_backslash(cli):
    cli.server.add(AssistantMessage([Text("Got the paste.")]), AssistantMessage([Text("Got both lines.")]))
    term = cli.spawn("chat")
    await term.expect_text("/help for help")
    # The chat asked the terminal to mark pastes.
    assert "\x1b[?2004h" in term.raw
    term.send("Review: \x1b[200~line one\r\nline two\rline three\x1b[201~")
    await term.expect_text("line three")
    assert cli.server.requests == []  # a paste is not sent: Enter sends it
    term.send("\r")
    await term.expect_text("Got the paste.")
    await term.expect(r"■ completed")
    term.send("top\\\r")
    term.send("middle\x1b\rbottom\r")
    await term.expect_text("Got both lines.")
    await term.expect(r"■ completed")
    assert _sent(cli) == ["Review: line one\nline two\nline three", "top\nmiddle\nbottom"]
    assert len(cli.server.requests) == 2
    term.type_line("/quit")
    assert await term.wait() == 0


async def test_history_is_recalled_with_up_and_ctrl_r_in_the_next_chat(cli):
    cli.server.add(*(AssistantMessage([Text(f"Answer {i}.")]) for i in range(1, 5)))
    term = cli.spawn("chat")
    await term.expect_text("/help for help")
    for line in ("alpha question", "beta question"):
        term.type_line(line)
        await term.expect(r"■ completed")
    term.type_line("/quit")
    assert await term.wait() == 0

    term = cli.spawn("chat")
    await term.expect_text("/help for help")
    # ↑ three times reaches the oldest line (past /quit), ↓ comes back one; edit it and send.
    term.send(UP + UP + UP + DOWN + " again\r")
    await term.expect_text("Answer 3.")
    await term.expect(r"■ completed")
    term.send(CTRL_R + "alph")
    await term.expect_text("alpha question")
    term.send("\r")  # takes the match into the line
    term.send(" once more\r")
    await term.expect_text("Answer 4.")
    assert _sent(cli)[2:] == ["beta question again", "alpha question once more"]
    term.type_line("/quit")
    assert await term.wait() == 0
    history = (cli.workspace.parent / "data" / "agentrio" / "history").read_text().splitlines()
    assert history[-2:] == ['"alpha question once more"', '"/quit"']


async def test_a_turn_that_stops_short_says_how_to_go_on(cli):
    cli.server.add(AssistantMessage([ToolCall("c1", "ls", {})]), AssistantMessage([Text("Two files.")]))
    term = cli.spawn("chat", "--max-turns", "1", "--permission", "allow")
    await term.expect_text("/help for help")
    term.type_line("Look around.")
    await term.expect(r"■ max_turns")
    await term.expect_text(
        "it used its 1 model requests: say 'continue' to go on "
        "(start chat with a higher --max-turns for longer runs)"
    )
    term.type_line("continue")
    await term.expect_text("Two files.")
    await term.expect(r"■ completed")
    term.type_line("/quit")
    assert await term.wait() == 0
    assert "say 'continue'" not in term.text[term.text.index("Two files.") :]
