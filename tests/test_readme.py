"""The README's promises: its example runs as written, its Quick start is
exactly two commands, .ci/run runs the same ones, and the commands of "Use
it from the terminal" run as written."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(language, text=README):
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_tour_example_runs_as_written(tmp_path):
    example = _blocks("python")[0]
    script = tmp_path / "tour.py"
    script.write_text(example)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["  read_config -> eu-west-1", "completed - The service runs in eu-west-1."]


def test_quick_start_is_two_commands_and_ci_runs_them():
    quick_start = README.split("## Quick start", 1)[1]
    commands = [line for line in _blocks("sh", quick_start)[0].splitlines() if line.strip()]
    assert commands == ["pip install -e '.[test]' && agentrio demo", "pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert all(command in ci.splitlines() for command in commands)


def _section(title: str) -> str:
    """The text of the README's section ``## title``, up to the next one."""
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


async def test_the_terminal_section_runs_as_written(nursery, tmp_path):
    """Every command of "Use it from the terminal", in order, in one shell on
    a terminal, against the fake OpenAI server (``OPENAI_BASE_URL``)."""
    from agentrio.messages import AssistantMessage, Text

    from .cli.conftest import Terminal
    from .fake_openai import start_fake_openai

    section = _section("Use it from the terminal")
    commands, schema_run = _blocks("sh", section)
    (city,) = _blocks("json", section)
    paris = {"name": "Paris", "population": 2048472}
    server = await start_fake_openai(
        nursery,
        [
            AssistantMessage([Text("The test expects 3; add returns 2.")]),
            AssistantMessage([Text("The diff renames total.")]),
            AssistantMessage([Text("Fixed: add returns a + b now.")]),
            AssistantMessage([Text(json.dumps(paris))]),
        ],
    )
    work = tmp_path / "work"
    work.mkdir()
    (work / "city.json").write_text(city)
    # A change for `git diff` to show.
    (work / "calc.py").write_text("total = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    subprocess.run(["git", "add", "calc.py"], cwd=work, check=True)
    (work / "calc.py").write_text("grand_total = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTRIO_", "OPENAI_", "ANTHROPIC_"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
        OPENAI_BASE_URL=server.base_url,
        TERM="xterm-256color",
    )
    script = f"set -e\n{commands}{schema_run}echo 'all commands ran'\n"
    term = Terminal(
        pexpect.spawn(
            "/bin/sh", ["-c", script], cwd=str(work), env=env, dimensions=(40, 120), encoding="utf-8"
        )
    )
    try:
        await term.expect_text("The test expects 3; add returns 2.")
        await term.expect(r"■ completed")
        await term.expect_text("The diff renames total.")
        await term.expect(r"■ completed")
        await term.expect_text("/help for help")  # agentrio chat
        term.type_line("/quit")
        await term.expect_text("agentrio chat · session fix-calc")  # agentrio chat --session fix-calc
        await term.expect_text("› Why does test_calc.py fail? Fix it.")
        term.type_line("And now?")
        await term.expect_text("Fixed: add returns a + b now.")
        term.type_line("/quit")
        await term.expect_text(json.dumps(paris))  # cat city.out.json
        await term.expect_text("all commands ran")
        assert await term.wait() == 0
    finally:
        if term.child.isalive():
            term.child.terminate(force=True)
    assert json.loads((work / "city.out.json").read_text()) == paris

    first, diff, resumed, typed = (request.body for request in server.requests)
    assert {body["model"] for body in (first, diff, resumed, typed)} == {"gpt-4.1"}
    assert "+grand_total = 1" in diff["messages"][-1]["content"]
    said = [m["content"] for m in resumed["messages"] if m["role"] != "system"]
    assert said == ["Why does test_calc.py fail? Fix it.", "The test expects 3; add returns 2.", "And now?"]
    assert typed["response_format"]["json_schema"]["schema"]["properties"] == json.loads(city)["properties"]


async def test_the_sessions_commands_run_as_written(tmp_path):
    """The shell block of "Durable sessions", line by line, on an
    agentrio.db holding fix-issue-42 and a child agent's session."""
    from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore
    from agentrio.messages import AssistantMessage, Text

    (commands,) = _blocks("sh", README.split("\nFrom the shell (", 1)[1].split("\n#", 1)[0])
    model = ScriptedModel([AssistantMessage([Text(f"answer {i}")]) for i in range(7)])
    async with Runtime(SQLiteStore(tmp_path / "agentrio.db")) as rt:
        agent = await rt.create(AgentSpec("coder", model), session_id="fix-issue-42")
        for i in range(7):
            await agent.run(f"question {i}")
        await rt.create(AgentSpec("reviewer", ScriptedModel([])), session_id="review", parent=agent)
        await rt.dispose(agent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTRIO_")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    done = [
        subprocess.run(
            ["/bin/sh", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        for line in commands.splitlines()
    ]
    listed, shown, exported, forked, deleted = done
    assert [d.returncode for d in done] == [0, 0, 0, 0, 1]
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert [row[:2] for row in rows] == [["fix-issue-42", "coder"], ["└─", "review"]]
    assert "user: question 6" in shown.stdout and "assistant: answer 6" in shown.stdout
    assert all(json.loads(line) for line in exported.stdout.splitlines())
    assert forked.stdout.startswith("session_") and "with 12 messages" in forked.stderr
    # Its agent spawned one, so delete asks for --with-children, as the comment says.
    assert "give --with-children to delete them too" in deleted.stderr
