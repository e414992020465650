"""What a person reads in the terminal: Markdown answers, word-aware wrapping,
coloured diffs with the changed lines first, live token counts, notices set
apart from the person's words, a long piped prompt echoed as one line."""

from __future__ import annotations

import json
import re

from agentrio.messages import AssistantMessage, Text, ToolCall, Usage

from ..fake_openai import Hang

ANSWER = "# Plan\n\nThis is **bold** and `code`.\n\n- first\n- second\n\n```python\nprint('hi')\n```\n"


async def test_an_answer_is_markdown_on_a_terminal_and_raw_in_a_pipe_or_json(cli):
    cli.server.add(*(AssistantMessage([Text(ANSWER)]) for _ in range(3)))
    term = cli.spawn("run", "Plan it.")
    await term.expect(r"■ completed")
    assert await term.wait() == 0
    # Rendered once a block is complete (the live region shows the block still streaming as it comes).
    assert "This is bold and code." in term.text
    assert re.search(r"• first\s*\n\s*• second", term.text)
    assert re.search(r"print\('hi'\) +\n", term.text)  # a code block, padded to its width

    piped = await cli.run("run", "Plan it.")
    assert piped.returncode == 0
    assert ANSWER.strip() in piped.stdout.decode()

    as_json = await cli.run("run", "Plan it.", "--json")
    events = [json.loads(line) for line in as_json.stdout.decode().splitlines()]
    ends = [e for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"]
    assert ends[0]["message"]["content"][0]["text"] == ANSWER


async def test_long_lines_wrap_between_words(cli):
    words = " ".join(f"word{i:03d}" for i in range(60))  # 479 characters on a 120-column terminal
    cli.server.add(AssistantMessage([Text(words)]))
    term = cli.spawn("run", "Say many words.")
    await term.expect(r"■ completed")
    assert await term.wait() == 0
    # The answer as printed once whole (while it streams, the live region shows it as it comes).
    printed = term.text[term.text.rindex("word000") : term.text.index("■ completed")]
    lines = [line.strip() for line in printed.splitlines() if "word0" in line and "working" not in line]
    assert len(lines) >= 4
    assert all(re.fullmatch(r"(word\d{3} ?)+", line) for line in lines), lines
    assert " ".join(lines).split() == words.split()


async def test_the_status_line_counts_the_reply_while_it_streams(cli):
    cli.server.add(Hang(AssistantMessage([Text("x" * 400)])))
    term = cli.spawn("run", "Stream a lot.")
    await term.expect(r"working \d+\.\ds · 0 tokens in, ~100 out")
    term.interrupt()
    assert await term.wait() == 130


async def test_the_max_turns_notice_is_a_notice_not_the_persons_words(cli):
    cli.server.add(AssistantMessage([ToolCall("c1", "ls", {})], usage=Usage(10, 2)))
    term = cli.spawn("run", "Look around.", "--max-turns", "1")
    await term.expect_text("ⓘ The run stopped here: it reached its limit of 1 model requests")
    await term.expect(r"■ max_turns")
    assert await term.wait() == 3
    assert "› [The run stopped" not in term.text


async def test_a_long_piped_prompt_is_echoed_as_one_line(cli):
    prompt = "Review this diff:\n" + "".join(f"+line {i}\n" for i in range(200))
    cli.server.add(AssistantMessage([Text("Reviewed.")]))
    term = cli.spawn("run", "-", stdin=prompt)
    await term.expect_text(f"› Review this diff:  (+200 more lines, {len(prompt):,} characters)")
    await term.expect_text("Reviewed.")
    assert await term.wait() == 0
    assert "+line 100" not in term.text
    assert cli.server.requests[0].body["messages"][-1]["content"] == prompt


async def test_an_edit_preview_is_a_coloured_diff_with_its_changed_lines_first(cli):
    before = "".join(f"line {i}\n" for i in range(60))
    after = before
    for i in range(2, 60, 10):  # six changes, each in a hunk of its own
        after = after.replace(f"line {i}\n", f"changed {i}\n")
    (cli.workspace / "long.txt").write_text(before)
    cli.server.add(
        AssistantMessage(
            [ToolCall("c1", "edit", {"path": "long.txt", "old_string": before, "new_string": after})]
        ),
        AssistantMessage([Text("Edited.")]),
    )
    term = cli.spawn("run", "Change some lines.")
    await term.expect(r"\? allow edit")
    await term.expect_text("d details")
    shown = term.text[term.text.index("? allow edit") :]
    # Every change is shown, the unchanged context is what was left out.
    for i in range(2, 60, 10):
        assert f"-line {i}" in shown and f"+changed {i}" in shown
    assert "more lines (d shows them all)" in shown
    assert "\x1b[32m" in term.raw and "\x1b[31m" in term.raw  # + green, - red
    term.send("d")  # the whole diff, context and all
    await term.expect_text(" line 10")
    term.send("y")
    # The result shows the changed lines too, not the diff's headers.
    await term.expect_text("│ Edited long.txt (replaced once):")
    await term.expect_text("│ -line 32")
    await term.expect_text("│ +changed 32")
    await term.expect_text("Edited.")
    assert await term.wait() == 0
    assert (cli.workspace / "long.txt").read_text() == after
