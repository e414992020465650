"""MCP servers over HTTP: a real server (the SDK's ``MCPServer`` under
uvicorn, ``mcp_http_server.py``) on a loopback port in a subprocess, killed
and started again on the same port while the bridge holds it."""

import hashlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from agentrio import AgentSpec, ScriptedModel
from agentrio.supervisors import ChildRestart
from agentrio.tools.mcp import ServerDidNotStart, mcp_server
from tests.conftest import record
from tests.helpers import calls, say

SERVER = str(Path(__file__).with_name("mcp_http_server.py"))
TOKEN = "Bearer s3cret-token-4711"
TOKEN_DIGEST = hashlib.sha256(TOKEN.encode()).hexdigest()


class Remote:
    """The server process on a fixed loopback port, which the test can kill
    and start again."""

    def __init__(self, tmp_path: Path, *, sse: bool = False) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.sse = sse
        self.cancel_log = tmp_path / "cancelled.log"
        self.cancel_log.touch()
        self.process: trio.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{'sse' if self.sse else 'mcp'}"

    def command(self) -> list[str]:
        return [sys.executable, SERVER, str(self.port), *(["--sse"] if self.sse else [])]

    def env(self) -> dict[str, str]:
        return {**os.environ, "CANCEL_LOG": str(self.cancel_log)}

    async def start(self) -> None:
        self.process = await trio.lowlevel.open_process(
            self.command(), env=self.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        with trio.fail_after(20):
            while True:
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", self.port)
                except OSError:
                    assert self.process.poll() is None, "the server exited"
                    await trio.sleep(0.05)
                    continue
                await stream.aclose()
                return

    async def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    def cancelled(self) -> list[str]:
        return self.cancel_log.read_text().splitlines()


@pytest.fixture(scope="module")
def shared_remote(tmp_path_factory):
    """One server for the tests that neither kill it nor change its tools."""
    server = Remote(tmp_path_factory.mktemp("remote"))
    process = subprocess.Popen(
        server.command(), env=server.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
            break
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
    yield server
    process.kill()
    process.wait()


async def wait_cancelled(remote: Remote, count: int) -> None:
    """Until the server has logged ``count`` cancelled calls."""
    with trio.fail_after(5):
        while len(remote.cancelled()) < count:
            await trio.sleep(0.02)


@pytest.fixture
async def remote(tmp_path):
    server = Remote(tmp_path)
    await server.start()
    yield server
    if server.process.poll() is None:
        await server.kill()


def text(result) -> str:
    return result.to_message("call-1", "tool").text


async def test_a_remote_server_offers_its_tools_and_gets_the_callers_headers_which_are_never_logged(
    shared_remote, call, reports, caplog
):
    remote = shared_remote
    caplog.set_level(logging.DEBUG)
    events = []
    async with mcp_server(
        url=remote.url, headers={"Authorization": TOKEN}, on_event=events.append, prefix="r_"
    ) as server:
        assert server.name == "127.0.0.1"
        tools = server.tools_by_name()
        assert sorted(tools) == ["r_authorization", "r_echo", "r_grow", "r_pid", "r_slow"]
        assert tools["r_echo"].execution_mode == "parallel" and tools["r_slow"].execution_mode == "exclusive"
        assert text(await call(tools["r_echo"], text="over http")) == "over http"
        assert text(await call(tools["r_authorization"])) == TOKEN_DIGEST
        assert text(await call(tools["r_slow"], seconds=0)) == "slept"
        assert reports == [{"progress": 0, "total": 1, "message": "sleeping"}]
    assert events == []
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "s3cret" not in logged and "s3cret" not in repr(server._transport)


async def test_a_server_killed_mid_call_fails_that_call_and_the_next_call_goes_to_it_once_restarted(
    remote, call
):
    events = []
    async with mcp_server(url=remote.url, name="remote", on_event=events.append, within=60) as server:
        tools = server.tools_by_name()
        first = text(await call(tools["pid"]))
        async with trio.open_nursery() as nursery:

            async def kill_and_restart():
                await trio.sleep(0.3)  # the call is in flight
                await remote.kill()
                await trio.sleep(0.3)
                await remote.start()

            nursery.start_soon(kill_and_restart)
            lost = await call(tools["slow"], seconds=30)
        assert lost.is_error
        assert text(lost) == (
            "MCP server 'remote' lost its connection during the call, so whether the call took effect "
            "is unknown; it is reconnected for later calls"
        )
        second = text(await call(tools["pid"]))
        assert second != first and int(second) == remote.process.pid

        # Killed, and called while it is down: the call could not connect,
        # so it waits for the server to be back; there it finds its session
        # unknown (404), so it is sent again on a new one.
        await remote.kill()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(remote.start)
            third = await call(tools["echo"], text="waited")
        assert (third.is_error, text(third)) == (False, "waited")
    assert [(type(e), e.child_id) for e in events] == [(ChildRestart, "remote")] * 2
    assert events[0].error == "ServerExited: MCP server 'remote' went away"


async def test_a_cancelled_call_is_cancelled_on_the_server_and_its_result_says_so(shared_remote, rt):
    remote, before = shared_remote, len(shared_remote.cancelled())
    async with mcp_server(url=remote.url, name="remote") as server:
        model = ScriptedModel([calls(("slow", {"seconds": 30})), say("never")])
        agent = await rt.create(AgentSpec("a", model, tools=server.tools))
        async with record(agent) as recorder, trio.open_nursery() as nursery:
            nursery.start_soon(agent.run, "go")
            with trio.fail_after(10):
                while not recorder.of("tool_execution_update"):
                    await trio.sleep(0.02)
            await agent.cancel()
        (result,) = [e.result for e in recorder.of("tool_execution_end")]
        assert result.is_error and result.text.startswith("TOOL_ABORTED: the run was cancelled")
        await wait_cancelled(remote, before + 1)
        await trio.sleep(0.1)
        assert len(remote.cancelled()) == before + 1


async def test_a_call_past_its_timeout_is_cancelled_on_the_server(shared_remote, call):
    remote, before = shared_remote, len(shared_remote.cancelled())
    async with mcp_server(url=remote.url, name="remote", call_timeout=0.5) as server:
        result = await call(server.tools_by_name()["slow"], seconds=30)
        assert result.is_error
        assert (
            text(result) == "MCP server 'remote' did not answer 'slow' within 0.5 s; the call was cancelled"
        )
        await wait_cancelled(remote, before + 1)
        assert text(await call(server.tools_by_name()["echo"], text="still here")) == "still here"


async def test_a_changed_tool_list_is_listed_again_and_offered(remote, call):
    async with mcp_server(url=remote.url, name="remote") as server:
        agent_tools = {"mine": object()}
        server.offer(agent_tools)
        assert "grow" in agent_tools and "fresh" not in agent_tools
        assert text(await call(server.tools_by_name()["grow"], name="fresh")) == "grown"
        with trio.fail_after(5):
            while "fresh" not in server.tools_by_name():
                await trio.sleep(0.02)
        assert sorted(server.tools_by_name()) == ["authorization", "echo", "fresh", "pid", "slow"]
        assert sorted(agent_tools) == ["authorization", "echo", "fresh", "mine", "pid", "slow"]
        assert text(await call(agent_tools["fresh"])) == "fresh here"


async def test_an_endpoint_of_the_older_sse_transport_is_reached_with_it(tmp_path, call):
    remote = Remote(tmp_path, sse=True)
    await remote.start()
    try:
        async with mcp_server(url=remote.url, headers={"Authorization": TOKEN}) as server:
            tools = server.tools_by_name()
            assert text(await call(tools["echo"], text="over sse")) == "over sse"
            assert text(await call(tools["authorization"])) == TOKEN_DIGEST
    finally:
        await remote.kill()


async def test_a_url_nothing_listens_on_fails_at_once():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with trio.fail_after(2), pytest.raises(ServerDidNotStart, match="did not start: cannot connect"):
        async with mcp_server(url=f"http://127.0.0.1:{port}/mcp", name="nobody"):
            pytest.fail("entered the block")


async def test_a_url_or_a_command_not_both():
    with pytest.raises(TypeError, match="a command or a url"):
        async with mcp_server("python", url="http://127.0.0.1:1/mcp"):
            pass
    with pytest.raises(ValueError, match="http:// or https://"):
        async with mcp_server(url="ftp://example.com/mcp"):
            pass


async def test_a_server_that_does_not_come_back_is_given_up_and_its_tools_answer_why(remote, call):
    events = []
    async with mcp_server(
        url=remote.url, name="remote", max_restarts=1, startup_timeout=0.3, on_event=events.append
    ) as server:
        echo = server.tools_by_name()["echo"]
        await remote.kill()
        assert (await call(echo, text="lost")).is_error
        with trio.fail_after(5):
            given_up = await call(echo, text="anyone?")
        assert text(given_up).startswith(
            "MCP server 'remote' is unavailable: supervisor 'mcp:remote' gave up: child 'remote' failed "
            "(ServerDidNotStart: MCP server 'remote' did not start: cannot connect within 0.3 s: "
            f"all attempts to connect to 127.0.0.1:{remote.port} failed) after 1 restarts"
        )
    assert [type(e).__name__ for e in events] == ["ChildRestart", "Escalation"]
