"""Drive agentrio's ACP agent with the official ACP SDK (asyncio) against the
fake OpenAI server (trio, in a thread of its own), checking every message
agentrio sends against the SDK's schema models."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Self

import trio
from acp import connect_to_agent, schema

from tests.fake_openai import start_fake_openai

from .npm_acp import OfficialSchema, official_schema

ROOT = Path(__file__).resolve().parents[2]

RESPONSES = {
    "initialize": schema.InitializeResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/prompt": schema.PromptResponse,
    "session/list": schema.ListSessionsResponse,
    "session/resume": schema.ResumeSessionResponse,
    "session/fork": schema.ForkSessionResponse,
    "session/close": schema.CloseSessionResponse,
    "session/set_mode": schema.SetSessionModeResponse,
    "session/set_config_option": schema.SetSessionConfigOptionResponse,
}
REQUESTS = {
    "session/request_permission": schema.RequestPermissionRequest,
    "fs/read_text_file": schema.ReadTextFileRequest,
    "fs/write_text_file": schema.WriteTextFileRequest,
    "terminal/create": schema.CreateTerminalRequest,
    "terminal/output": schema.TerminalOutputRequest,
    "terminal/wait_for_exit": schema.WaitForTerminalExitRequest,
    "terminal/kill": schema.KillTerminalRequest,
    "terminal/release": schema.ReleaseTerminalRequest,
}
NOTIFICATIONS = {"session/update": schema.SessionNotification}


def conforms(model: type, data: Any) -> None:
    """``data`` parses as ``model`` and says nothing the model does not know."""
    parsed = model.model_validate(data)
    assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == data, (model, data)


class Conformance:
    """Checks each message agentrio sends, knowing the client's requests:
    against the Python SDK's models, and against the official JSON schema
    from npm (``schema``; None: where npm cannot be reached, the models only)."""

    def __init__(self, schema: OfficialSchema | None = None) -> None:
        self.schema = schema
        self.methods: dict[Any, str] = {}
        self.sent: list[dict[str, Any]] = []
        #: The agent's process, once spawned.
        self.process: Any = None

    def client_sent(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            self.methods[message["id"]] = message["method"]

    def agent_sent(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        assert message.get("jsonrpc") == "2.0", message
        if self.schema is not None:
            self.schema.check(message, None if "method" in message else self.methods.get(message.get("id")))
        if "method" in message:
            model = (REQUESTS if "id" in message else NOTIFICATIONS)[message["method"]]
            conforms(model, message["params"])
        elif "error" in message:
            conforms(schema.Error, message["error"])
        else:
            method = self.methods[message["id"]]
            if method in RESPONSES:
                conforms(RESPONSES[method], message["result"])
            else:
                assert method.startswith("_agentrio/") and isinstance(message["result"], dict), message


class FakeServerThread:
    """The fake OpenAI server, run by trio in a thread for the block."""

    def __init__(self, replies: list[Any] = ()) -> None:
        self._replies = list(replies)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)

    async def _main(self) -> None:
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self.server = await start_fake_openai(nursery, self._replies)
            self._token = trio.lowlevel.current_trio_token()
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def __enter__(self) -> Self:
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc_info: object) -> None:
        trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join()

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)

    def add(self, *replies: Any) -> None:
        self.call(self.server.add, *replies)

    @property
    def requests(self) -> list[Any]:
        return self.call(lambda: list(self.server.requests))


class RecordingClient:
    """An ACP client that records updates and answers permission requests
    from a script of option ids."""

    def __init__(self, answers: list[str] = (), buffers: dict[str, str] | None = None) -> None:
        #: The editor's open buffers by path, for fs/read_text_file and fs/write_text_file.
        self.buffers = buffers if buffers is not None else {}
        self.file_requests: list[tuple[str, str]] = []
        self.updates: list[Any] = []
        self.permission_requests: list[Any] = []
        self.answers = list(answers)
        self._changed = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        pass

    async def request_permission(self, options, session_id, tool_call, **kwargs):
        self.permission_requests.append(tool_call)
        option = self.answers.pop(0)
        assert option in {o.option_id for o in options}
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(option_id=option, outcome="selected")
        )

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update)
        self._changed.set()
        self._changed = asyncio.Event()

    async def ext_notification(self, method, params):
        pass

    async def read_text_file(self, path, session_id, limit=None, line=None, **kwargs):
        self.file_requests.append(("read", path))
        lines = self.buffers[path].splitlines(keepends=True)
        start = (line or 1) - 1
        chosen = lines[start : start + limit] if limit is not None else lines[start:]
        return schema.ReadTextFileResponse(content="".join(chosen))

    async def write_text_file(self, content, path, session_id, **kwargs):
        self.file_requests.append(("write", path))
        self.buffers[path] = content
        return schema.WriteTextFileResponse()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 20) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()

    def of_kind(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of_kind(kind))

    def statuses(self, call_id: str) -> list[str]:
        return [
            u.status
            for u in self.updates
            if u.session_update in ("tool_call", "tool_call_update")
            and u.tool_call_id == call_id
            and u.status
        ]


def _tap_writes(writer: asyncio.StreamWriter, check: Conformance) -> asyncio.StreamWriter:
    """Let ``check`` see each line the client writes to the subprocess."""
    write = writer.write
    partial = b""

    def tapped(data: bytes) -> None:
        nonlocal partial
        *lines, partial = (partial + data).split(b"\n")
        for line in lines:
            if line.strip():
                check.client_sent(json.loads(line))
        write(data)

    writer.write = tapped  # type: ignore[method-assign]
    return writer


@asynccontextmanager
async def spawn_acp(
    client: RecordingClient, *args: str, stderr_path: Path, env: dict[str, str] | None = None
):
    """``python -m agentrio acp ARGS`` driven by ``client`` through the SDK;
    yields the SDK connection and the conformance checker (with the official
    schema when npm can fetch it)."""
    check = Conformance(official_schema(required=False))
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "fake", **(env or {})}
    with open(stderr_path, "ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentrio",
            "acp",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=environ,
        )
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)

    driver = asyncio.current_task()

    async def tap() -> None:
        try:
            async for line in process.stdout:
                check.agent_sent(json.loads(line))
                reader.feed_data(line)
        except BaseException:
            driver.cancel()  # fail now, with the tap's error, rather than at the timeout
            raise
        finally:
            reader.feed_eof()

    tapping = asyncio.ensure_future(tap())
    check.process = process
    conn = connect_to_agent(client, _tap_writes(process.stdin, check), reader)
    try:
        yield conn, check
    finally:
        await conn.close()
        process.stdin.close()
        try:
            async with asyncio.timeout(15):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()
        await tapping  # a message that did not conform fails the test here


def drive(replies, main) -> None:
    """Run ``main(fake)`` under asyncio beside a fake OpenAI server that
    answers ``replies``, for at most 60 s."""
    with FakeServerThread(replies) as fake:
        asyncio.run(asyncio.wait_for(main(fake), 60))


def acp_args(fake: FakeServerThread, tmp_path: Path, *extra: str) -> list[str]:
    """``agentrio acp``'s arguments for a model served by ``fake`` and a
    store of the test's own."""
    return [
        "--model",
        "openai:fake",
        "--base-url",
        fake.server.base_url,
        "--db",
        str(tmp_path / "s.db"),
        *extra,
    ]
