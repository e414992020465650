"""The README's promises: every fenced block in it is run by a test as
written, or checked against what it describes where it is not code
(``BLOCKS`` says which test takes which block, and a test checks that it
names every block); its Quick start is exactly two commands and .ci/run
runs the same ones.

A block is read from README.md when its test runs, so a README edit that
breaks a block fails a test. Python fragments run with only the names the
README leaves to the reader (``spec``, ``model``, ``rt``, ``root``, the
functions a supervisor runs), each given by the test by name; a provider
model string talks to the fake servers of tests/fake_openai.py and
tests/fake_anthropic.py through the environment a user would set."""

import ast
import importlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import httpx
import pexpect
import pytest
import trio

from .helpers import calls, say

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _blocks(language, text=README):
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def _fenced(text: str = README) -> list[tuple[str, str, str]]:
    """Every fenced block of ``text``, in order, as (the title of the heading
    it is under, its language, its text)."""
    blocks, heading, lines = [], "", iter(text.splitlines(keepends=True))
    for line in lines:
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("```"):
            body = []
            for inner in lines:
                if inner.startswith("```"):
                    break
                body.append(inner)
            blocks.append((heading, line[3:].strip(), "".join(body)))
    return blocks


def _block(heading: str, language: str, index: int = 0) -> str:
    """The ``index``-th block in ``language`` under the heading ``heading``."""
    return [body for title, lang, body in _fenced() if (title, lang) == (heading, language)][index]


async def _run_fragment(code: str, **reader_supplies):
    """Run a README fragment as a reader pastes it into an async function of
    theirs (top-level ``await`` and ``async with`` allowed), where no name is
    defined but those the README leaves to the reader, given by name in
    ``reader_supplies``. Returns the fragment's names."""
    namespace = {"__name__": "readme_fragment", **reader_supplies}
    compiled = compile(code, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    awaitable = eval(compiled, namespace)
    if awaitable is not None:
        await awaitable
    return namespace


async def _ended(process: trio.Process) -> None:
    """Wait for ``process`` to end, asked to already; killed after 30 s."""
    with trio.move_on_after(30):
        await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()


def _shell_env(**variables: str) -> dict[str, str]:
    """A user's environment for the commands: this interpreter's scripts
    (``agentrio``) on PATH, and no agentrio or provider setting but ``variables``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTRIO_", "OPENAI_", "ANTHROPIC_"))}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env.update(variables)
    return env


#: Every fenced block of README.md, in order: the heading it is under, its
#: language, and the tests that run it (in this module unless one says another).
BLOCKS = [
    (
        "Quick start",
        "sh",
        "test_quick_start_is_two_commands_and_ci_runs_them",
        "test_the_quick_start_installs_this_tree_and_runs_the_demo",
    ),
    ("Use it from the terminal", "sh", "test_the_terminal_section_runs_as_written"),
    ("Use it from the terminal", "json", "test_the_terminal_section_runs_as_written"),
    ("Use it from the terminal", "sh", "test_the_terminal_section_runs_as_written"),
    ("A tour of the API", "python", "test_the_tour_example_runs_as_written"),
    ("Tools", "python", "test_the_deploy_tool_runs_make_deploy_and_reports_progress"),
    ("Tools", "python", "test_typed_tools.py::test_the_readme_typed_tool_example_gets_the_enum_member"),
    ("Durable sessions", "python", "test_the_durable_sessions_snippet_creates_then_restores"),
    ("Durable sessions", "sh", "test_the_sessions_commands_run_as_written"),
    (
        "Sessions on PostgreSQL",
        "python",
        "test_the_postgres_snippet_restores_and_says_when_a_session_is_held",
    ),
    (
        "Teams: agents as tools",
        "python",
        "test_the_team_snippet_runs_the_reviewer_as_a_child_with_coding_tools",
    ),
    (
        "Supervisors and MCP tool servers",
        "python",
        "test_the_supervisor_snippet_restarts_the_watcher_with_the_index",
    ),
    (
        "Supervisors and MCP tool servers",
        "python",
        "test_the_mcp_snippet_gives_the_agent_the_time_servers_tools",
    ),
    ("Models", "python", "test_the_from_string_snippet_reaches_each_provider_through_its_environment"),
    ("Tracing", "python", "test_tracing.py::test_the_readme_tracing_example_runs_as_written"),
    ("Editors and the web console (ACP)", "json", "test_the_zed_settings_start_an_acp_agent_that_answers"),
    (
        "Editors and the web console (ACP)",
        "sh",
        "test_agentrio_serve_as_written_serves_the_console_it_prints",
    ),
    ("Performance", "sh", "test_the_performance_commands_name_benchmarks_that_run"),
    ("Layout", "", "test_the_layout_lists_every_package"),
]


def test_every_block_of_the_readme_is_run_by_a_test():
    """A block added to the README without a test, or a test renamed, fails here."""
    assert [(heading, language) for heading, language, _ in _fenced()] == [row[:2] for row in BLOCKS]
    for _, _, *tests in BLOCKS:
        for test in tests:
            module, _, name = test.rpartition("::")
            where = globals() if not module else vars(importlib.import_module(f"tests.{module[:-3]}"))
            assert name.startswith("test_") and callable(where.get(name)), f"{test} is not a test"


def test_the_tour_example_runs_as_written(tmp_path):
    example = _blocks("python")[0]
    script = tmp_path / "tour.py"
    script.write_text(example)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "  read_config -> eu-west-1",
        "completed - The service runs in eu-west-1.",
    ]


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
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
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
        await term.expect_text("agentrio chat · session fix-calc")  # agentrio chat --resume fix-calc
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
    """The shell block of "Durable sessions", line by line, on the default
    store (in the user data directory) holding fix-issue-42 and a child agent's session."""
    from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore
    from agentrio.messages import AssistantMessage, Text

    (commands,) = _blocks("sh", README.split("\nFrom the shell (", 1)[1].split("\n#", 1)[0])
    model = ScriptedModel([AssistantMessage([Text(f"answer {i}")]) for i in range(7)])
    (tmp_path / "data" / "agentrio").mkdir(parents=True)
    async with Runtime(SQLiteStore(tmp_path / "data" / "agentrio" / "sessions.db")) as rt:
        agent = await rt.create(AgentSpec("coder", model), session_id="fix-issue-42")
        for i in range(7):
            await agent.run(f"question {i}")
        await rt.create(AgentSpec("reviewer", ScriptedModel([])), session_id="review", parent=agent)
        await rt.dispose(agent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTRIO_")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    done = [
        subprocess.run(
            ["/bin/sh", "-c", line],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
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


def test_the_quick_start_installs_this_tree_and_runs_the_demo(tmp_path):
    """The first command: its ``pip install`` is checked rather than run (it
    would reinstall the package under the running suite): the extra it names
    exists and this tree is what is installed, editable. Its ``agentrio demo``
    runs as written. The second command, ``pytest``, is the one running this."""
    quick_start = _block("Quick start", "sh").splitlines()
    install, demo = quick_start[0].split(" && ")
    pip, verb, editable, target = shlex.split(install)
    assert (pip, verb, editable, target) == ("pip", "install", "-e", ".[test]")
    assert "test" in PYPROJECT["project"]["optional-dependencies"]
    installed = json.loads(metadata.distribution("agentrio").read_text("direct_url.json"))
    assert installed["dir_info"].get("editable") and Path(installed["url"].removeprefix("file://")) == ROOT
    done = subprocess.run(
        ["/bin/sh", "-c", demo],
        cwd=tmp_path,
        env=_shell_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "run completed" in done.stdout and "final calc.py:" in done.stdout
    assert quick_start[1] == "pytest" and PYPROJECT["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]


def _pip_installs() -> list[str]:
    """What every ``pip install`` of the README installs, in blocks and prose."""
    targets = re.findall(r"pip install\s+(?:-e\s+)?('[^']+'|[\w.\[\]-]+)", README)
    return [shlex.split(target)[0] for target in targets]


def test_every_pip_install_names_an_extra_the_package_has():
    """The ``pip install`` lines of the Quick start and Performance, and those
    in comments and prose (``agentrio[postgres]``, ``[mcp]``, ``[otel]``)."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    named = _pip_installs()
    for target in named:
        if "[" in target:
            package, extra = target.removesuffix("]").split("[")
            assert package in (".", "agentrio") and extra in extras, target
        else:  # a package of its own, which the test extra installs
            assert any(requirement.startswith(f"{target}>=") for requirement in extras["test"]), target
    assert {"test", "bench", "postgres", "mcp", "otel"} <= {t.removesuffix("]").split("[")[-1] for t in named}


async def test_the_deploy_tool_runs_make_deploy_and_reports_progress(tmp_path, monkeypatch):
    """The block as written, called by an agent. What the reader supplies is
    their deploy system, ``make deploy SERVICE`` run in /srv: a stand-in
    ``make`` first on PATH plays it, succeeding for ``web`` only."""
    from agentrio import AgentSpec, Runtime, ScriptedModel

    from .conftest import record

    assert Path("/srv").is_dir(), "the example deploys from /srv (a directory the FHS defines)"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").write_text('#!/bin/sh\necho "make $* in $(pwd)"\n[ "$2" = web ]\n')
    (bin_dir / "make").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    deploy = (await _run_fragment(_block("Tools", "python")))["deploy"]
    assert deploy.execution_mode == "exclusive"
    model = ScriptedModel(
        [
            calls(("deploy", {"service": "web"})),
            say("web is deployed."),
            calls(("deploy", {"service": "db"})),
            say("db failed."),
        ]
    )
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("ops", model, tools=[deploy]))
        async with record(agent) as events:
            assert (await agent.run("Deploy web.")).text == "web is deployed."
            assert (await agent.run("Deploy db.")).text == "db failed."
    updates = [e.progress for e in events.of("tool_execution_update")]
    assert updates[0] == {"stage": "building"}
    assert {"stream": "stdout", "text": "make deploy web in /srv\n"} in updates
    web, db = events.of("tool_execution_end")
    assert (web.is_error, web.result.text) == (False, "make deploy web in /srv\n")
    assert (db.is_error, db.result.text) == (True, "make deploy db in /srv\n")


async def test_the_durable_sessions_snippet_creates_then_restores(tmp_path, monkeypatch):
    """Run where the reader's program runs (sessions.db lands there), with the
    reader's ``spec``: once on no file (it creates), then after a run of that
    session (it restores the history)."""
    from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore

    monkeypatch.chdir(tmp_path)
    spec = AgentSpec("coder", ScriptedModel([say("add subtracts.")]))
    snippet = _block("Durable sessions", "python")
    created = (await _run_fragment(snippet, spec=spec))["agent"]
    assert (tmp_path / "sessions.db").exists()
    assert (created.session_id, created.messages) == ("fix-issue-42", ())
    async with Runtime(SQLiteStore("sessions.db")) as rt:
        await (await rt.create(spec, session_id="fix-issue-42")).run("Which function is wrong?")
    restored = (await _run_fragment(snippet, spec=spec))["agent"]
    assert [m.text for m in restored.messages] == ["Which function is wrong?", "add subtracts."]


async def test_the_postgres_snippet_restores_and_says_when_a_session_is_held(postgres):
    """The block with the reader's ``spec`` and the reader's database: its DSN
    (the one string literal that is a ``postgresql://`` URL) is the test
    server's. While another store holds the session it raises
    ``SessionHeld``, as its comment says; once released, it restores it."""
    from agentrio import AgentSpec, PostgresStore, Runtime, ScriptedModel, SessionHeld

    dsn = postgres.new_database()
    try:
        snippet = _block("Sessions on PostgreSQL", "python")
        snippet, found = re.subn(r'"postgresql://[^"]*"', repr(dsn), snippet)
        assert found == 1
        spec = AgentSpec("coder", ScriptedModel([say("add subtracts.")]))
        async with Runtime(PostgresStore(dsn)) as elsewhere:
            held = await elsewhere.create(spec, session_id="fix-issue-42")
            await held.run("Which function is wrong?")
            with pytest.raises(SessionHeld, match="fix-issue-42"):
                await _run_fragment(snippet, spec=spec)
        names = await _run_fragment(snippet, spec=spec)
        assert [m.text for m in names["agent"].messages] == ["Which function is wrong?", "add subtracts."]
        assert names["store"].lease_seconds == 15.0
    finally:
        postgres.drop_database(dsn)


async def test_the_team_snippet_runs_the_reviewer_as_a_child_with_coding_tools(tmp_path):
    """The block with the reader's ``model`` (one script that both agents
    read from, in the order they ask) and ``root``; then ``lead`` runs."""
    from agentrio import Runtime, ScriptedModel

    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    model = ScriptedModel(
        [
            calls(("ask_reviewer", {"task": "Review calc.py."})),  # lead
            calls(("read", {"path": "calc.py"})),  # reviewer
            say("add subtracts."),  # reviewer
            say("The reviewer found that add subtracts."),  # lead
        ]
    )
    team = await _run_fragment(_block("Teams: agents as tools", "python"), model=model, root=tmp_path)
    async with Runtime() as rt:
        lead = await rt.create(team["lead"])
        async with lead.stream("Review calc.py.") as run:
            events = [event async for event in run]
    assert run.result.text == "The reviewer found that add subtracts."
    children = [e for e in events if e.type == "child_event"]
    assert children and all(e.names == ["reviewer"] for e in children)
    (read,) = [e.event for e in children if e.event.type == "tool_execution_end"]
    assert read.tool_name == "read" and "return a - b" in read.result.text
    (answer,) = [e for e in events if e.type == "tool_execution_end"]
    assert (answer.tool_name, answer.result.text) == ("ask_reviewer", "add subtracts.")


async def test_the_supervisor_snippet_restarts_the_watcher_with_the_index(capsys):
    """The block with the reader's ``run_index``, ``run_watcher`` and
    ``serve``: while ``serve`` runs the index fails once; the watcher,
    started after it, is restarted with it; leaving the block stops both,
    newest first. ``on_event=print`` prints the restart."""
    log = []
    index_lost, watcher_back = trio.Event(), trio.Event()

    async def run_index(task_status):
        log.append("index up")
        task_status.started()
        try:
            if log.count("index up") == 1:
                await index_lost.wait()
                raise OSError("the index file went away")
            await trio.sleep_forever()
        finally:
            log.append("index down")

    async def run_watcher(task_status):
        log.append("watcher up")
        task_status.started()
        if log.count("watcher up") == 2:
            watcher_back.set()
        try:
            await trio.sleep_forever()
        finally:
            log.append("watcher down")

    async def serve():
        index_lost.set()
        await watcher_back.wait()

    snippet = _block("Supervisors and MCP tool servers", "python", 0)
    await _run_fragment(snippet, run_index=run_index, run_watcher=run_watcher, serve=serve)
    assert log == [
        "index up",
        "watcher up",
        "index down",
        "watcher down",
        "index up",
        "watcher up",  # the restart
        "watcher down",
        "index down",  # the block's end
    ]
    (printed,) = capsys.readouterr().out.splitlines()
    assert printed.startswith("ChildRestart(") and "restarting=['index', 'watcher']" in printed


async def test_the_mcp_snippet_gives_the_agent_the_time_servers_tools():
    """The block with the reader's ``rt`` and ``model``, running the real
    ``mcp-server-time``; the agent then asks it the time in Paris."""
    from agentrio import Runtime, ScriptedModel

    model = ScriptedModel(
        [
            calls(("get_current_time", {"timezone": "Europe/Paris"})),
            say("It is evening in Paris."),
        ]
    )
    async with Runtime() as rt:
        snippet = _block("Supervisors and MCP tool servers", "python", 1)
        names = await _run_fragment(snippet, rt=rt, model=model)
        agent = names["agent"]
        assert {"get_current_time", "convert_time"} <= set(agent.tools)
        result = await agent.run("What time is it in Paris?")
    assert result.stop_reason == "completed"
    now = agent.messages[2]
    assert now.tool_name == "get_current_time" and not now.is_error
    assert json.loads(now.text)["timezone"] == "Europe/Paris"


async def test_the_from_string_snippet_reaches_each_provider_through_its_environment(nursery, monkeypatch):
    """The block's statements in order, with the variables its comments name
    set as a user sets them (keys, and base URLs of the fake servers); each
    ``model`` it makes, and its ``spec``, then answer a prompt."""
    from agentrio import AgentSpec, Runtime

    from .fake_anthropic import start_fake_anthropic
    from .fake_openai import start_fake_openai

    openai = await start_fake_openai(nursery, [say("from OpenAI")])
    anthropic = await start_fake_anthropic(nursery, [say("from Anthropic"), say("from the spec's model")])
    for name, value in {
        "OPENAI_API_KEY": "sk-openai",
        "OPENAI_BASE_URL": openai.base_url,
        "ANTHROPIC_API_KEY": "sk-anthropic",
        "ANTHROPIC_BASE_URL": anthropic.base_url,
    }.items():
        monkeypatch.setenv(name, value)
    snippet = _block("Models", "python")
    assert set(re.findall(r"[A-Z]+_[A-Z_]+", snippet)) == {
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    }
    names, models = {}, []
    for statement in ast.parse(snippet).body:  # each `model = ...` replaces the last
        exec(compile(ast.Module([statement], []), "README.md", "exec", dont_inherit=True), names)
        if isinstance(statement, ast.Assign) and statement.targets[0].id == "model":
            models.append(names["model"])
    async with Runtime() as rt:
        answers = []
        for spec in [AgentSpec("probe", model) for model in models] + [names["spec"]]:
            answers.append((await (await rt.create(spec)).run("Who are you?")).text)
    assert answers == ["from OpenAI", "from Anthropic", "from the spec's model"]
    (chat,) = openai.requests
    assert (chat.body["model"], chat.headers["authorization"]) == ("gpt-4.1", "Bearer sk-openai")
    assert [(r.body["model"], r.headers["x-api-key"]) for r in anthropic.requests] == [
        ("claude-sonnet-4-5", "sk-anthropic")
    ] * 2


async def test_the_zed_settings_start_an_acp_agent_that_answers(nursery, tmp_path):
    """Zed's ``agent_servers`` entry: its command is the script this package
    installs, its arguments parse with the CLI's own parser, its ``env`` is
    the key its model needs. Then it is started as Zed starts it (that
    command, those arguments, that env added to the user's) and prompted over
    ACP, against the fake Anthropic server."""
    from agentrio.cli import build_parser
    from agentrio.gateway.stdio import LineTransport
    from agentrio.models.model_string import PROVIDERS

    from .fake_anthropic import start_fake_anthropic

    settings = json.loads(_block("Editors and the web console (ACP)", "json"))
    (server,) = settings["agent_servers"].values()
    assert set(server) == {"command", "args", "env"}
    assert server["command"] in PYPROJECT["project"]["scripts"]
    args = build_parser().parse_args(server["args"])
    assert args.command == "acp"
    assert set(server["env"]) == {PROVIDERS[args.model.partition(":")[0]][1]}

    fake = await start_fake_anthropic(nursery, [say("Hello from agentrio.")])
    env = _shell_env(**server["env"], ANTHROPIC_BASE_URL=fake.base_url, HOME=str(tmp_path))
    command = shutil.which(server["command"], path=env["PATH"])
    process = await trio.lowlevel.open_process(
        [command, *server["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=tmp_path
    )
    wire = LineTransport(process.stdout, process.stdin)

    async def call(id_, method, params):
        await wire.send(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}))
        updates = []
        while "id" not in (message := json.loads(await wire.receive())):
            updates.append(message["params"]["update"])
        assert "result" in message, message
        return message["result"], updates

    try:
        with trio.fail_after(60):
            initialized, _ = await call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            assert initialized["protocolVersion"] == 1
            session, _ = await call(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
            prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "Hello?"}]}
            done, updates = await call(3, "session/prompt", prompt)
    finally:
        await process.stdin.aclose()  # as Zed ends an agent server
        await _ended(process)
    assert done["stopReason"] == "end_turn"
    said = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert said == "Hello from agentrio."
    (request,) = fake.requests
    assert (request.body["model"], request.headers["x-api-key"]) == ("claude-sonnet-4-5", "sk-...")
    assert process.returncode == 0
    assert (tmp_path / ".local/share/agentrio/sessions.db").exists()  # the default --db, as the README says


async def test_agentrio_serve_as_written_serves_the_console_it_prints(nursery, tmp_path):
    """The command as written (a user's key exported, the fake OpenAI server
    as the provider, a home of its own for the default --db); it binds where
    its comment says and prints the address the next line shows, with a
    token. That address serves the console; ACP at /acp takes that token and
    refuses none with 401; SIGINT stops it cleanly."""
    import trio_websocket

    from .fake_openai import start_fake_openai

    command, shown = _block("Editors and the web console (ACP)", "sh").splitlines()
    command, binds = (part.strip() for part in command.split("#"))
    address = binds.removeprefix("binds ")
    assert address == "127.0.0.1:8765"  # the default --host and --port
    printed = re.escape(shown.removeprefix("#").split("<-")[0].strip()).replace("…", r"([\w-]+)")
    fake = await start_fake_openai(nursery)
    env = _shell_env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=fake.base_url, HOME=str(tmp_path))
    process = await trio.lowlevel.open_process(
        ["/bin/sh", "-c", f"exec {command}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        with trio.fail_after(60):
            out = b""
            while b"\n" not in out:
                chunk = await process.stdout.receive_some()
                if not chunk:
                    errors = await process.stderr.receive_some()
                    pytest.fail(f"agentrio serve ended: {errors.decode()}")
                out += chunk
        first_line = out.decode().splitlines()[0]
        match = re.fullmatch(printed, first_line)
        assert match, first_line
        url, token = first_line.split(": ", 1)[1], match[1]
        async with httpx.AsyncClient() as client:
            page = await client.get(url)
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
            assert url.startswith(f"http://{address}/")
            assert (await client.get(f"http://{address}/acp")).status_code == 401
        async with trio_websocket.open_websocket_url(f"ws://{address}/acp?token={token}") as ws:
            initialize = {"protocolVersion": 1, "clientCapabilities": {}}
            await ws.send_message(
                json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
            )
            assert json.loads(await ws.get_message())["result"]["protocolVersion"] == 1
    finally:
        process.send_signal(signal.SIGINT)
        await _ended(process)
    assert process.returncode == 0


#: Runs each script of its arguments as `python SCRIPT --help` does; prints how each exited and its usage.
_HELP_OF_EACH = """
import contextlib, io, json, runpy, sys
from pathlib import Path
helps = {}
for script in sys.argv[1:]:
    sys.argv, sys.path[0] = [script, "--help"], str(Path(script).resolve().parent)
    with contextlib.redirect_stdout(io.StringIO()) as usage:
        try:
            runpy.run_path(script, run_name="__main__")
            status = "ran without exiting"
        except SystemExit as exit:
            status = exit.code
    helps[script] = (status, usage.getvalue())
print(json.dumps(helps))
"""


def test_the_performance_commands_name_benchmarks_that_run():
    """The block's benchmark lines, each run with ``--help`` (at the sizes as
    written each takes minutes; tests/test_bench_smoke.py and
    tests/test_tracing.py run the --quick sizes): each script exists and
    parses its options, and the first three take ``--quick``, as the text
    under the block says. The ``pip install`` line is checked by
    test_every_pip_install_names_an_extra_the_package_has."""
    install, *benchmarks = _block("Performance", "sh").splitlines()
    assert install.startswith("pip install ")
    scripts = []
    for line in benchmarks:
        command, _, comment = line.partition("#")
        python, script = shlex.split(command)
        assert python == "python" and comment.strip()
        scripts.append(script)
    assert len(set(scripts)) == len(scripts) and all((ROOT / s).is_file() for s in scripts)
    # Each as `python SCRIPT --help` runs it (its folder first on sys.path),
    # all in one interpreter to start it once.
    helps = subprocess.run(
        [sys.executable, "-c", _HELP_OF_EACH, *scripts],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert helps.returncode == 0, helps.stderr
    for number, (script, (status, usage)) in enumerate(json.loads(helps.stdout).items()):
        assert status == 0 and usage.startswith("usage: "), (script, status, usage)
        assert "--quick" in usage or number >= 3, script


def test_the_layout_lists_every_package():
    """The Layout block is a listing, not code: each folder it names is a
    package of agentrio, and it names every one."""
    listed = re.findall(r"^  (\w+)/", _block("Layout", ""), re.MULTILINE)
    packages = sorted(p.parent.name for p in (ROOT / "agentrio").glob("*/__init__.py"))
    assert _block("Layout", "").startswith("agentrio/\n")
    assert sorted(listed) == packages


def test_the_agentrio_toml_settings_named_are_the_ones_it_takes():
    """Not a block: the prose of "Use it from the terminal" lists what
    agentrio.toml may set; the config loader takes exactly those."""
    from agentrio.cli.config import KEYS

    named = re.search(
        r"an `agentrio.toml` in\sthe working directory or the nearest parent\s+that has one \(([^)]*)\)",
        README,
    )[1]
    assert tuple(re.findall(r"`(\w+)`", named)) == KEYS
