"""Sandboxed subprocess tools, through the agent's real ``bash`` tool (and
an MCP server), under each mechanism this machine has: what a command may
write, reach and leave behind."""

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest
import trio

from agentrio import AgentSpec, Runtime, Sandbox, SandboxUnavailable, ScriptedModel
from agentrio.events import Event
from agentrio.messages import converter
from agentrio.tools import sandbox as sandbox_module
from agentrio.tools.builtin import coding_tools
from agentrio.tools.mcp import mcp_server
from agentrio.tools.sandbox_denials import denials
from tests.helpers import calls, say
from tests.tools.processes import assert_all_gone, processes_with, unique_duration

WRITE_SERVER = [str(Path(__file__).with_name("mcp_write_server.py"))]


def _usable(mechanism: str):
    reason = sandbox_module._unusable(mechanism)
    if reason is None:
        return mechanism
    if os.environ.get("CI") and mechanism == "bubblewrap" and shutil.which("bwrap") is None:
        # Installing it is CI's job (.ci/run); a kernel that refuses namespaces is not.
        pytest.fail(f"CI must test the bubblewrap sandbox: {reason}", pytrace=False)
    return pytest.param(
        mechanism, marks=pytest.mark.skip(reason=f"{mechanism} cannot sandbox here: {reason}")
    )


MECHANISMS = [_usable(m) for m in sandbox_module.MECHANISMS]


async def run_bash(workspace: Path, sandbox: Sandbox, command: str, tool: str = "bash", **args):
    """The ``bash`` call's result message (or ``tool``'s, with ``args``), and every event of the run."""
    model = ScriptedModel([calls((tool, args or {"command": command})), say("done")])
    with trio.fail_after(20):
        async with Runtime() as rt:
            agent = await rt.create(AgentSpec("a", model, tools=coding_tools(workspace, sandbox=sandbox)))
            async with agent.stream("go") as run:
                events = [event async for event in run]
    [end] = [e for e in events if e.type == "tool_execution_end"]
    return end.result, events


def denied(events) -> list[tuple[str, str | None]]:
    return [(e.kind, e.target) for e in events if e.type == "sandbox_denied"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_writes_outside_the_workspace_fail_and_leave_nothing(workspace, mechanism):
    outside = workspace.parent / "outside"
    before = sorted(p.name for p in outside.iterdir())
    stray = Path("/tmp") / f"agentrio-stray-{unique_duration()}"
    result, events = await run_bash(
        workspace,
        Sandbox(mechanism=mechanism),
        f"echo x > {outside}/new; touch {stray}; mkdir {outside}/dir; rm {outside}/secret.txt; "
        "echo kept > inside; echo $TMPDIR > tmpdir; echo t > $TMPDIR/t && cat $TMPDIR/t; cat /etc/hostname >/dev/null",
    )
    assert not result.is_error  # the last command succeeded: denials are told all the same
    refusal = "Read-only file system" if mechanism == "bubblewrap" else "Permission denied"
    assert f"{outside}/new: {refusal}" in result.text
    assert result.text.startswith("t\n")  # the private temporary directory is writable
    assert sorted(p.name for p in outside.iterdir()) == before
    assert not stray.exists()
    assert (workspace / "inside").read_text() == "kept\n"
    temp = (workspace / "tmpdir").read_text().strip()
    assert temp.startswith("/") and not Path(temp).exists()  # removed once the command ended
    assert ("path", f"{outside}/new") in denied(events)
    assert ("path", str(stray)) in denied(events)
    event = next(e for e in events if e.type == "sandbox_denied")
    assert converter.structure(converter.unstructure(event, Event), Event) == event
    assert event.tool_name == "bash" and refusal in event.line
    assert not any(target and target.startswith(str(workspace) + "/") for _, target in denied(events))


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_read_only_blocks_writes_in_the_workspace(workspace, mechanism):
    (workspace / "existing").write_text("old\n")
    result, events = await run_bash(
        workspace,
        Sandbox("read-only", mechanism=mechanism),
        "cat existing; echo new > existing; echo x > created; echo t > $TMPDIR/t && cat $TMPDIR/t",
    )
    assert result.text.startswith("old\nt\n")
    assert (workspace / "existing").read_text() == "old\n"
    assert not (workspace / "created").exists()
    assert ("path", str(workspace / "created")) in denied(events)


@pytest.mark.parametrize("tool", ["write", "edit"])
async def test_a_read_only_sandbox_makes_write_and_edit_refuse_too(workspace, tool):
    (workspace / "existing").write_text("old\n")
    args = {"path": "existing", "content": "new"}
    if tool == "edit":
        args = {"path": "existing", "old_string": "old", "new_string": "new"}
    result, events = await run_bash(workspace, Sandbox("read-only"), "", tool, **args)
    assert result.is_error and result.text == "Read-only file system: existing"
    assert (workspace / "existing").read_text() == "old\n"
    assert denied(events) == [("path", str(workspace / "existing"))]


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("network", [False, True])
async def test_network_off_cannot_reach_a_loopback_listener(workspace, mechanism, network):
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    received = []

    async def serve(stream):
        received.append(await stream.receive_some(100))

    connect = f"import socket; socket.create_connection(('127.0.0.1', {port})).sendall(b'hello')"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, serve, listeners)
        result, events = await run_bash(
            workspace, Sandbox(mechanism=mechanism, network=network), f'{sys.executable} -c "{connect}"'
        )
        if network:
            with trio.fail_after(5):
                while not received:
                    await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    if network:
        assert not result.is_error and received == [b"hello"]
        assert denied(events) == []
    else:
        assert result.is_error and "Network is unreachable" in result.text
        assert received == []
        assert denied(events) == [("network", None)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("network", [False, True])
async def test_network_off_cannot_reach_a_unix_socket_outside_either(tmp_path, workspace, mechanism, network):
    # A daemon's socket (the session bus, Docker's) could run commands unconfined.
    path = str(tmp_path / "daemon.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        listener.listen()
        listener.setblocking(False)
        connect = (
            f"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); s.sendall(b'hello')"
        )
        result, _ = await run_bash(
            workspace, Sandbox(mechanism=mechanism, network=network), f'{sys.executable} -c "{connect}"'
        )
        if network:
            connection, _ = listener.accept()  # the command connected and wrote before it ended
            with connection:
                connection.setblocking(True)
                assert connection.recv(5) == b"hello"
        else:
            with pytest.raises(BlockingIOError):
                listener.accept()  # nobody connected
            assert result.is_error and "Network is unreachable" in result.text


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_background_child_can_neither_escape_nor_outlive_the_call(workspace, mechanism):
    marker = unique_duration()
    late = workspace.parent / "outside" / "late"
    result, _ = await run_bash(
        workspace,
        Sandbox(mechanism=mechanism),
        f"(sleep {marker} &); (setsid sh -c 'sleep 0.3; echo x > {late}; echo y > escaped' &); echo started",
    )
    assert result.text == "started"
    assert_all_gone(processes_with(marker))
    await trio.sleep(0.5)  # past the moment the detached child would have written
    assert not late.exists() and not (workspace / "escaped").exists()


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_confined_command_cannot_signal_processes_outside(workspace, mechanism):
    if mechanism == "landlock" and sandbox_module._confine.landlock_abi() < 6:
        pytest.skip("Landlock scopes signals from ABI 6")
    result, _ = await run_bash(
        workspace,
        Sandbox(mechanism=mechanism),
        f"kill -0 {os.getpid()} && echo reached; kill -0 $$ && echo self",
    )
    assert "reached" not in result.text and "self" in result.text


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_confined_command_has_no_capabilities_and_only_harmless_devices(workspace, mechanism):
    result, _ = await run_bash(
        workspace,
        Sandbox(mechanism=mechanism),
        "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; echo x > /dev/null && echo null; echo x > /dev/shm/x",
    )
    lines = result.text.splitlines()
    assert lines[:2] == ["CapPrm:\t0000000000000000", "CapEff:\t0000000000000000"]
    if mechanism == "landlock":  # bubblewrap leaves the bounding set; no_new_privs keeps it unusable
        assert lines[2] == "CapBnd:\t0000000000000000"
    assert lines[3] == "null"
    assert not Path("/dev/shm/x").exists() or mechanism == "bubblewrap"  # bubblewrap's /dev/shm is its own


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_the_supervisor_stops_a_confined_command_that_ignores_term(workspace, mechanism, call):
    marker = unique_duration()
    bash = coding_tools(workspace, sandbox=Sandbox(mechanism=mechanism))[-1]
    result = await call(bash, command=f"trap '' TERM; echo started; sleep {marker}; echo never", timeout=0.5)
    assert result.content.startswith("started\n[timed out after ")
    assert result.details["timed_out"]
    assert_all_gone(processes_with(marker))


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_an_mcp_server_under_read_only_cannot_write(tmp_path, mechanism, call):
    async with mcp_server(
        sys.executable, WRITE_SERVER, cwd=tmp_path, sandbox=Sandbox("read-only", mechanism=mechanism)
    ) as server:
        tools = server.tools_by_name()
        refused = await call(tools["write"], path="file", text="x")
        temp = (await call(tools["temporary"])).to_message("c", "t").text
        written = await call(tools["write"], path=f"{temp}/file", text="x")
    assert refused.is_error
    assert ("Read-only file system" if mechanism == "bubblewrap" else "Permission denied") in (
        refused.to_message("c", "t").text
    )
    assert list(tmp_path.iterdir()) == []
    assert not written.is_error  # its private temporary directory, gone with the block
    assert temp.startswith("/") and not Path(temp).exists()


async def test_off_runs_unconfined(workspace, call):
    outside = workspace.parent / "outside"
    bash = coding_tools(workspace, sandbox=Sandbox("off"))[-1]
    assert not (await call(bash, command=f"echo x > {outside}/new")).is_error
    assert (outside / "new").exists()


@pytest.fixture
def nothing_usable(monkeypatch, tmp_path):
    """A machine with neither bwrap on the PATH nor Landlock."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sandbox_module._confine, "landlock_abi", lambda: 0)
    sandbox_module._unusable.cache_clear()
    yield
    sandbox_module._unusable.cache_clear()


def test_a_sandbox_that_cannot_be_enforced_raises_when_the_tools_are_made(workspace, nothing_usable):
    assert Sandbox.backend() is None
    with pytest.raises(SandboxUnavailable) as raised:
        coding_tools(workspace, sandbox=Sandbox())
    assert "bubblewrap: bwrap is not installed" in str(raised.value)
    assert "landlock: Landlock is not enabled" in str(raised.value)
    with pytest.raises(SandboxUnavailable, match="bubblewrap: bwrap is not installed"):
        coding_tools(workspace, sandbox=Sandbox("read-only", mechanism="bubblewrap"))
    assert len(coding_tools(workspace, sandbox=Sandbox("off"))) == 7


async def test_an_mcp_server_that_cannot_be_sandboxed_is_not_started(tmp_path, nothing_usable):
    with pytest.raises(SandboxUnavailable):
        async with mcp_server(shutil.which("python3") or sys.executable, WRITE_SERVER, sandbox=Sandbox()):
            pass


def test_the_sandbox_checks_its_arguments(workspace):
    with pytest.raises(ValueError, match="mode must be one of"):
        Sandbox("danger")
    with pytest.raises(TypeError, match="single path"):
        Sandbox(writable=str(workspace))
    with pytest.raises(ValueError, match="is not a directory"):
        Sandbox(writable=[workspace / "missing"]).confine(workspace)


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_writable_and_readable_paths(tmp_path, mechanism, call):
    workspace, extra, hidden = (tmp_path / name for name in ("workspace", "extra", "hidden"))
    for folder in (workspace, extra, hidden):
        folder.mkdir()
    (hidden / "secret").write_text("s\n")
    sandbox = Sandbox(mechanism=mechanism, writable=[extra], readable=[extra])
    bash = coding_tools(workspace, sandbox=sandbox)[-1]
    result = await call(bash, command=f"echo x > {extra}/f && cat {extra}/f; cat {hidden}/secret")
    assert result.content.startswith("x\n[stderr]\n")
    assert "secret" in result.content and "s\n" not in result.content
    assert (extra / "f").exists()


def test_denials_are_read_from_the_forms_programs_print(tmp_path):
    confinement = sandbox_module.Confinement("landlock", False, (str(tmp_path),), None)
    output = "\n".join(
        [
            "bash: line 1: /etc/x: Permission denied",
            "touch: cannot touch '/srv/y': Permission denied",
            "mkdir: cannot create directory ‘/srv/z’: Permission denied",
            "PermissionError: [Errno 13] Permission denied: '/opt/w'",
            f"bash: line 2: {tmp_path}/inside: Permission denied",
            "curl: (7) Failed to connect to 10.0.0.1 port 8080: Network is unreachable",
            "bash: line 1: /etc/x: Permission denied",
        ]
    )
    found = [(d.kind, d.target) for d in denials(confinement, str(tmp_path), output)]
    assert found == [
        ("path", "/etc/x"),
        ("path", "/srv/y"),
        ("path", "/srv/z"),
        ("path", "/opt/w"),
        ("network", "10.0.0.1:8080"),
    ]
    bubblewrap = sandbox_module.Confinement("bubblewrap", True, (), None)
    assert denials(bubblewrap, "/", "x: Permission denied\nNetwork is unreachable") == []


def test_a_policy_reaches_the_shim_as_it_was_built():
    from agentrio.tools import _confine

    landlock = {"read": ["/", "/a b"], "write": ["/w"], "dev": ["/dev"], "tcp": False}
    for policy in (
        {"sockets": ["unix"], "landlock": landlock},
        {"sockets": None, "landlock": {**landlock, "tcp": True, "write": []}},
        {"sockets": None, "landlock": None, "bwrap_sockets": []},
        {"sockets": [], "landlock": None},
        {"sockets": None, "landlock": None},
    ):
        assert _confine.decode(_confine.encode(policy)) == policy


def test_the_model_is_told_what_the_sandbox_allows(workspace):
    def told(sandbox):
        return coding_tools(workspace, sandbox=sandbox)[-1].description.partition("inspect files.")[2]

    assert (
        told(Sandbox("read-only"))
        == " Commands run in a sandbox: they may write only in $TMPDIR and have no network."
    )
    assert (
        told(Sandbox(network=True))
        == " Commands run in a sandbox: they may write only in the workspace, $TMPDIR."
    )
    assert told(Sandbox("off")) == told(None) == ""
