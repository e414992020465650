"""The documentation's promises: every ``python`` block of README.md and of
docs/ is a complete program that runs as written, and prints what the
``text`` block right after it shows; every other block is checked by a test
named in ``BLOCKS``; the API reference names every public name.

A block is read from its page when its test runs, so an edit that breaks an
example fails a test. A program runs as ``python FILE`` runs it (its title
is its file name), in a temporary working directory, on a thread of its own
so that the test's event loop can serve what the program talks to: the fake
provider servers of tests/fake_openai.py and tests/fake_anthropic.py, the
suite's PostgreSQL server. What a program needs from its reader's machine —
an API key, a database — is given the way a reader gives it, through the
environment its comments name (``HARNESS``)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import re
import runpy
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import attrs
import httpx
import pexpect
import pytest
import trio

from .helpers import say

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


@attrs.frozen
class Block:
    """One fenced block: the page (relative to the repository), the line its
    fence opens on, the heading it is under, its language and ``title=``,
    its text, and for a ``python`` block the ``text`` block right after it
    (what it prints), if there is one."""

    page: str
    line: int
    heading: str
    language: str
    title: str
    body: str
    output: str | None = None


def pages() -> list[Path]:
    """README.md and every page of the site."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def fenced(path: Path) -> list[Block]:
    """Every fenced block of the page at ``path``, in order; a ``text`` block
    that follows a ``python`` block with nothing but blank lines between is
    that block's output, not a block of its own."""
    blocks: list[Block] = []
    heading, lines = "", path.read_text().splitlines(keepends=True)
    page, index, since_block = str(path.relative_to(ROOT)), 0, None
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith("#"):
            heading, since_block = line.lstrip("#").strip(), None
        elif line.startswith("```"):
            opened = index
            info = line[3:].strip()
            language = info.split()[0] if info else ""
            title = re.search(r'title="([^"]*)"', info)
            body = []
            while not lines[index].startswith("```"):
                body.append(lines[index])
                index += 1
            index += 1
            text = "".join(body)
            if language == "text" and since_block is not None and blocks[since_block].language == "python":
                blocks[since_block] = attrs.evolve(blocks[since_block], output=text)
            else:
                blocks.append(Block(page, opened, heading, language, title[1] if title else "", text))
            since_block = len(blocks) - 1
        elif line.strip():
            since_block = None
    return blocks


def every_block() -> list[Block]:
    return [block for path in pages() for block in fenced(path)]


def block(page: str, heading: str, language: str, index: int = 0) -> str:
    """The text of the ``index``-th block in ``language`` under ``heading`` of ``page``."""
    found = [b.body for b in fenced(ROOT / page) if (b.heading, b.language) == (heading, language)]
    return found[index]


def titled(title: str) -> Block:
    """The python block whose title is ``title``."""
    (found,) = [b for b in every_block() if b.language == "python" and b.title == title]
    return found


PROGRAMS = [b for b in every_block() if b.language == "python"]


def test_every_python_block_is_a_program_with_a_file_name() -> None:
    """A title names each program (``python TITLE`` runs it), once in the
    whole documentation, and each compiles as a module: no top-level
    ``await``, nothing a reader has to wrap."""
    titles = [b.title for b in PROGRAMS]
    assert all(re.fullmatch(r"[a-z_]+\.py", t) for t in titles), titles
    assert len(set(titles)) == len(titles), titles
    for program in PROGRAMS:
        compile(program.body, f"{program.page}:{program.line}", "exec", dont_inherit=True)


@attrs.define
class Reader:
    """What a harness may use to play the reader's machine, and, once the
    program ran, what it printed."""

    tmp_path: Path
    monkeypatch: pytest.MonkeyPatch
    nursery: trio.Nursery
    request: pytest.FixtureRequest
    stdout: str = ""


#: For a program that needs something of its reader's machine, an async
#: generator that sets it up, yields while the program runs, then checks
#: what the program did beyond what it printed.
HARNESS: dict[str, Callable[[Reader], AsyncIterator[None]]] = {}


def harness(title: str) -> Callable[[Callable[[Reader], AsyncIterator[None]]], Any]:
    def register(fn: Callable[[Reader], AsyncIterator[None]]) -> Callable[[Reader], AsyncIterator[None]]:
        HARNESS[title] = fn
        return fn

    return register


async def _nothing(reader: Reader) -> AsyncIterator[None]:
    yield


@pytest.mark.parametrize("title", [b.title for b in PROGRAMS])
async def test_the_example_runs_as_written(
    title: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    nursery: trio.Nursery,
    request: pytest.FixtureRequest,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The program as ``python FILE`` runs it (``runpy``, as ``__main__``), in
    an empty working directory; what it prints is its output block, exactly.
    Its harness, if it has one, is set up before and checks after; what it
    set up is undone however the program ends."""
    program = titled(title)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    script = tmp_path / program.title
    script.write_text(program.body)
    reader = Reader(tmp_path, monkeypatch, nursery, request)
    async with contextlib.asynccontextmanager(HARNESS.get(program.title, _nothing))(reader):
        capfd.readouterr()
        with trio.fail_after(60):
            await trio.to_thread.run_sync(
                functools.partial(runpy.run_path, str(script), run_name="__main__"), abandon_on_cancel=True
            )
        reader.stdout = capfd.readouterr().out
        if program.output is not None:
            assert reader.stdout == program.output


def test_every_python_block_has_a_known_harness() -> None:
    """A harness named after a program that no longer exists fails here."""
    assert set(HARNESS) <= {b.title for b in PROGRAMS}


# --- The API reference ---------------------------------------------------


def test_the_api_reference_names_every_public_name_once() -> None:
    """Each entry of ``agentrio.__all__`` has its ``::: ...NAME`` in
    docs/reference/ (before a page's "From their modules"), once; a name
    added to the package without a place in the reference fails here. A
    name is cited where it is defined only when its package path is
    ambiguous to the static reader (``agentrio.tool`` is also a module)."""
    import agentrio

    named = []
    for page in (DOCS / "reference").glob("*.md"):
        public = page.read_text().split("\n## From their modules\n")[0]
        for path in re.findall(r"^::: (agentrio\.[\w.]+)$", public, re.MULTILINE):
            assert path.count(".") == 1 or path == "agentrio.tools.decorator.tool", path
            named.append(path.rpartition(".")[2])
    assert sorted(named) == sorted(agentrio.__all__)


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.rglob("*.md"):
        assert f" {page.relative_to(DOCS)}\n" in nav, page


# --- Shell blocks ---------------------------------------------------------


def _commands(text: str) -> list[list[str]]:
    """The commands of a shell block, each split as the shell splits it;
    a pipeline or a ``&&`` list gives each of its commands."""
    commands = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"\s(?:\||&&|>)\s", line):
            commands.append(shlex.split(part))
    return commands


def test_every_agentrio_command_in_the_docs_parses() -> None:
    """Every ``agentrio ...`` line of a shell block, in any page, is a
    command line the parser takes (running them is for the tests of each)."""
    from agentrio.cli import build_parser

    parser = build_parser()
    checked = 0
    for found in every_block():
        if found.language != "sh":
            continue
        for argv in _commands(found.body):
            if argv[0] == "agentrio":
                try:
                    parser.parse_args(argv[1:])
                except SystemExit as exit:
                    assert exit.code == 0, f"{found.page}:{found.line}: {shlex.join(argv)}"
                checked += 1
    assert checked >= 15


def _pip_installs() -> list[str]:
    """What every ``pip install`` of the documentation installs, in blocks and prose."""
    text = "".join(page.read_text() for page in pages())
    targets = re.findall(r"pip install\s+(?:-e\s+)?('[^']+'|[\w.\[\]-]+)", text)
    return [shlex.split(target)[0] for target in targets]


def test_every_pip_install_names_an_extra_the_package_has() -> None:
    """The ``pip install`` lines of the Quick start and the benchmarks, and
    those in prose (``agentrio[postgres]``, ``[mcp]``, ``[otel]``)."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    named = _pip_installs()
    for target in named:
        if "[" in target:
            package, extra = target.removesuffix("]").split("[")
            assert package in (".", "agentrio") and extra in extras, target
        else:  # a package of its own, which the test extra installs
            assert any(requirement.startswith(f"{target}>=") for requirement in extras["test"]), target
    assert {"test", "bench", "postgres", "mcp", "otel"} <= {t.removesuffix("]").split("[")[-1] for t in named}


#: Every block that is not a program, where it is, and the tests that check
#: it (in this module unless one names another).
BLOCKS: list[tuple[str, str, str, str]] = [
    ("README.md", "Quick start", "sh", "test_readme.py::test_quick_start_is_two_commands_and_ci_runs_them"),
    ("docs/benchmarks.md", "Benchmarks", "sh", "test_the_benchmark_commands_name_benchmarks_that_run"),
    (
        "docs/getting-started.md",
        "Install and try it",
        "sh",
        "test_getting_started_installs_as_the_quick_start_does",
    ),
    ("docs/getting-started.md", "From the terminal", "sh", "test_every_agentrio_command_in_the_docs_parses"),
    ("docs/guides/cli.md", "Run and chat", "sh", "test_the_command_line_page_runs_as_written"),
    ("docs/guides/cli.md", "Structured output", "json", "test_the_command_line_page_runs_as_written"),
    ("docs/guides/cli.md", "Structured output", "sh", "test_the_command_line_page_runs_as_written"),
    ("docs/guides/fleet.md", "Workers", "sh", "test_every_agentrio_command_in_the_docs_parses"),
    (
        "docs/guides/gateway.md",
        "Editors over ACP",
        "json",
        "test_the_zed_settings_start_an_acp_agent_that_answers",
    ),
    (
        "docs/guides/gateway.md",
        "The web console",
        "sh",
        "test_agentrio_serve_as_written_serves_the_console_it_prints",
    ),
    ("docs/guides/mcp.md", "Agents as an MCP server", "sh", "test_every_agentrio_command_in_the_docs_parses"),
    ("docs/guides/sessions.md", "From the shell", "sh", "test_the_sessions_commands_run_as_written"),
    ("docs/layout.md", "Project layout", "", "test_the_layout_lists_every_package"),
]


def test_every_other_block_is_checked_by_a_test() -> None:
    """A block added without a test, or a test renamed, fails here. Shell
    blocks are also checked by test_every_agentrio_command_in_the_docs_parses."""
    others = [(b.page, b.heading, b.language) for b in every_block() if b.language != "python"]
    assert others == [row[:3] for row in BLOCKS]
    for *_, test in BLOCKS:
        module, _, name = test.rpartition("::")
        where = globals() if not module else vars(importlib.import_module(f"tests.{module[:-3]}"))
        assert name.startswith("test_") and callable(where.get(name)), f"{test} is not a test"


# --- What programs need of their reader's machine --------------------------


@harness("deploy.py")
async def _deploy(reader: Reader) -> AsyncIterator[None]:
    """The reader's deploy system, ``make deploy SERVICE`` run in /srv: a
    stand-in ``make`` first on PATH plays it, succeeding for ``web`` only."""
    assert Path("/srv").is_dir(), "the example deploys from /srv (a directory the FHS defines)"
    bin_dir = reader.tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").write_text('#!/bin/sh\necho "make $* in $(pwd)"\n[ "$2" = web ]\n')
    (bin_dir / "make").chmod(0o755)
    reader.monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    yield


@harness("models.py")
async def _models(reader: Reader) -> AsyncIterator[None]:
    """The variables its comments name, set as a user sets them (keys, and
    the base URLs of the fake servers); each model then answers from its
    own provider, with the key of its environment."""
    from .fake_anthropic import start_fake_anthropic
    from .fake_openai import start_fake_openai

    openai = await start_fake_openai(reader.nursery, [say("from OpenAI")])
    anthropic = await start_fake_anthropic(
        reader.nursery, [say("from Anthropic"), say("from the spec's string")]
    )
    named = set(re.findall(r"[A-Z]+_[A-Z_]+", titled("models.py").body))
    assert named == {"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}
    for name, value in {
        "OPENAI_API_KEY": "sk-openai",
        "OPENAI_BASE_URL": openai.base_url,
        "ANTHROPIC_API_KEY": "sk-anthropic",
        "ANTHROPIC_BASE_URL": anthropic.base_url,
    }.items():
        reader.monkeypatch.setenv(name, value)
    yield
    assert reader.stdout.splitlines() == ["from OpenAI", "from Anthropic", "from the spec's string"]
    (chat,) = openai.requests
    assert (chat.body["model"], chat.headers["authorization"]) == ("gpt-4.1", "Bearer sk-openai")
    assert [(r.body["model"], r.headers["x-api-key"]) for r in anthropic.requests] == [
        ("claude-sonnet-4-5", "sk-anthropic")
    ] * 2


async def _database(reader: Reader) -> AsyncIterator[None]:
    """``$AGENTRIO_DB``, which the program reads, names a new database of
    the suite's PostgreSQL server."""
    postgres = reader.request.getfixturevalue("postgres")
    dsn = postgres.new_database()
    reader.monkeypatch.setenv("AGENTRIO_DB", dsn)
    try:
        yield
    finally:
        postgres.drop_database(dsn)


harness("postgres.py")(_database)
harness("fleet.py")(_database)


@harness("sandbox.py")
async def _sandbox(reader: Reader) -> AsyncIterator[None]:
    from agentrio import Sandbox, SandboxUnavailable

    try:
        Sandbox("workspace-write").backend()
    except SandboxUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the sandbox example: {exc}", pytrace=False)
        pytest.skip(f"no sandbox on this machine: {exc}")
    yield
    assert not (reader.tmp_path / "outside.txt").exists()


@harness("tracing.py")
async def _tracing(reader: Reader) -> AsyncIterator[None]:
    """It instruments the process, as a program does once; the test's
    process goes on untraced."""
    import agentrio

    try:
        yield
    finally:
        agentrio.uninstrument()


@harness("sessions.py")
async def _sessions(reader: Reader) -> AsyncIterator[None]:
    yield
    assert (reader.tmp_path / "work" / "sessions.db").is_file()  # where the reader's program runs


# --- Blocks that are not programs -----------------------------------------


def _shell_env(**variables: str) -> dict[str, str]:
    """A user's environment for the commands: this interpreter's scripts
    (``agentrio``) on PATH, and no agentrio or provider setting but ``variables``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTRIO_", "OPENAI_", "ANTHROPIC_"))}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env.update(variables)
    return env


async def _ended(process: trio.Process) -> None:
    """Wait for ``process`` to end, asked to already; killed after 30 s."""
    with trio.move_on_after(30):
        await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()


def test_getting_started_installs_as_the_quick_start_does() -> None:
    assert block("docs/getting-started.md", "Install and try it", "sh") == block(
        "README.md", "Quick start", "sh"
    )


async def test_the_command_line_page_runs_as_written(nursery: trio.Nursery, tmp_path: Path) -> None:
    """Every command of the command line page's first blocks, in order, in one shell on
    a terminal, against the fake OpenAI server (``OPENAI_BASE_URL``)."""
    from agentrio.messages import AssistantMessage, Text

    from .cli.conftest import Terminal
    from .fake_openai import start_fake_openai

    commands = block("docs/guides/cli.md", "Run and chat", "sh")
    schema_run = block("docs/guides/cli.md", "Structured output", "sh")
    city = block("docs/guides/cli.md", "Structured output", "json")
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
    await trio.run_process(["git", "init", "-q"], cwd=work)
    await trio.run_process(["git", "add", "calc.py"], cwd=work)
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


async def test_the_sessions_commands_run_as_written(tmp_path: Path) -> None:
    """The shell block of the sessions page, line by line, on the default
    store (in the user data directory) holding fix-issue-42 and a child agent's session."""
    from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore
    from agentrio.messages import AssistantMessage, Text

    commands = block("docs/guides/sessions.md", "From the shell", "sh")
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
    lines = commands.splitlines()
    done: list[Any] = [None] * len(lines)

    async def run(index: int) -> None:
        finished = await trio.run_process(
            ["/bin/sh", "-c", lines[index]],
            check=False,
            cwd=tmp_path,
            env=env,
            capture_stdout=True,
            capture_stderr=True,
        )
        done[index] = subprocess.CompletedProcess(
            finished.args, finished.returncode, finished.stdout.decode(), finished.stderr.decode()
        )

    with trio.fail_after(60):
        async with trio.open_nursery() as reads:  # list, show and export only read: at once
            for index in range(3):
                reads.start_soon(run, index)
        for index in range(3, len(lines)):  # then fork, then delete, in order
            await run(index)
    listed, shown, exported, forked, deleted = done
    assert [d.returncode for d in done] == [0, 0, 0, 0, 1]
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert [row[:2] for row in rows] == [["fix-issue-42", "coder"], ["└─", "review"]]
    assert "user: question 6" in shown.stdout and "assistant: answer 6" in shown.stdout
    assert all(json.loads(line) for line in exported.stdout.splitlines())
    assert forked.stdout.startswith("session_") and "with 12 messages" in forked.stderr
    # Its agent spawned one, so delete asks for --with-children, as the comment says.
    assert "give --with-children to delete them too" in deleted.stderr


async def test_the_zed_settings_start_an_acp_agent_that_answers(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    """Zed's ``agent_servers`` entry: its command is the script this package
    installs, its arguments parse with the CLI's own parser, its ``env`` is
    the key its model needs. Then it is started as Zed starts it (that
    command, those arguments, that env added to the user's) and prompted over
    ACP, against the fake Anthropic server."""
    from agentrio.cli import build_parser
    from agentrio.gateway.stdio import LineTransport
    from agentrio.models.model_string import PROVIDERS

    from .fake_anthropic import start_fake_anthropic

    settings = json.loads(block("docs/guides/gateway.md", "Editors over ACP", "json"))
    (server,) = settings["agent_servers"].values()
    assert set(server) == {"command", "args", "env"}
    assert server["command"] in PYPROJECT["project"]["scripts"]
    args = build_parser().parse_args(server["args"])
    assert args.command == "acp"
    assert set(server["env"]) == {PROVIDERS[args.model.partition(":")[0]][1]}

    fake = await start_fake_anthropic(nursery, [say("Hello from agentrio.")])
    env = _shell_env(**server["env"], ANTHROPIC_BASE_URL=fake.base_url, HOME=str(tmp_path))
    command = shutil.which(server["command"], path=env["PATH"])
    assert command is not None
    process = await trio.lowlevel.open_process(
        [command, *server["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=tmp_path
    )
    assert process.stdout is not None and process.stdin is not None
    wire = LineTransport(process.stdout, process.stdin)

    async def call(id_: int, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        await wire.send(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}))
        updates = []
        while True:
            line = await wire.receive()
            assert line is not None, "the agent server ended"
            message = json.loads(line)
            if "id" in message:
                break
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
    assert (tmp_path / ".local/share/agentrio/sessions.db").exists()  # the default --db, as the page says


async def test_agentrio_serve_as_written_serves_the_console_it_prints(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    """The command as written (a user's key exported, the fake OpenAI server
    as the provider, a home of its own for the default --db); it binds where
    its comment says and prints the address the next line shows, with a
    token. That address serves the console; ACP at /acp takes that token and
    refuses none with 401; SIGINT stops it cleanly."""
    import trio_websocket

    from .fake_openai import start_fake_openai

    command, shown = block("docs/guides/gateway.md", "The web console", "sh").splitlines()
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
    assert process.stdout is not None and process.stderr is not None
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


def test_the_benchmark_commands_name_benchmarks_that_run() -> None:
    """The block's benchmark lines, each run with ``--help`` (at the sizes as
    written each takes minutes; tests/test_bench_smoke.py and
    tests/test_tracing.py run the --quick sizes): each script exists and
    parses its options, and the first three take ``--quick``, as the text
    under the block says. The ``pip install`` line is checked by
    test_every_pip_install_names_an_extra_the_package_has."""
    install, *benchmarks = block("docs/benchmarks.md", "Benchmarks", "sh").splitlines()
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
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert helps.returncode == 0, helps.stderr
    for number, (script, (status, usage)) in enumerate(json.loads(helps.stdout).items()):
        assert status == 0 and usage.startswith("usage: "), (script, status, usage)
        assert "--quick" in usage or number >= 3, script


def test_the_layout_lists_every_package() -> None:
    """The Layout block is a listing, not code: each folder it names is a
    package of agentrio, and it names every one."""
    listed = re.findall(r"^  (\w+)/", block("docs/layout.md", "Project layout", ""), re.MULTILINE)
    packages = sorted(p.parent.name for p in (ROOT / "agentrio").glob("*/__init__.py"))
    assert block("docs/layout.md", "Project layout", "").startswith("agentrio/\n")
    assert sorted(listed) == packages


def test_the_agentrio_toml_settings_named_are_the_ones_it_takes() -> None:
    """Not a block: the prose of the command line page lists what
    agentrio.toml may set; the config loader takes exactly those."""
    from agentrio.cli.config import KEYS

    named = re.search(
        r"an `agentrio.toml` in\sthe working directory or the nearest parent\s+that has one \(([^)]*)\)",
        (DOCS / "guides" / "cli.md").read_text(),
    )
    assert named is not None
    assert tuple(re.findall(r"`(\w+)`", named[1])) == KEYS
