"""``agentrio serve --db DSN`` processes serving ``tests.fleet.chaos_spec``,
and ACP SDK clients of them (asyncio), for the tests and the bench."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import connect_to_agent
from acp.ws import create_websocket_stream

from ..gateway.acp_harness import RecordingClient
from .workers import ROOT, SPEC

TOKEN = "s3cret-s3cret-s3cret"
LEASE = 2.0


@asynccontextmanager
async def serving(dsn: str, folder: Path, name: str, **env: str) -> AsyncIterator[tuple[Any, int]]:
    """``agentrio serve --db dsn`` serving ``tests.fleet.chaos_spec`` (its
    model's and tool's delays from ``env``): the process and its port."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "FLEET_DELAY": "0.05", **env}
    with open(folder / f"{name}.stderr", "ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentrio",
            "serve",
            "--port",
            "0",
            "--token",
            TOKEN,
            "--db",
            dsn,
            "--lease",
            str(LEASE),
            "--spec",
            SPEC,
            "--permission",
            "allow",
            "--root",
            str(folder),
            "--cwd",
            str(folder),
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=environ,
            cwd=ROOT,
        )
    try:
        banner = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        assert banner.startswith("agentrio console: http://127.0.0.1:"), (
            banner,
            (folder / f"{name}.stderr").read_text(),
        )
        yield process, int(banner.split(":")[3].split("/")[0])
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


@asynccontextmanager
async def client_of(
    port: int, client: RecordingClient | None = None
) -> AsyncIterator[tuple[Any, RecordingClient]]:
    transport = await create_websocket_stream(
        f"ws://127.0.0.1:{port}/acp", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    client = client or RecordingClient()
    conn = connect_to_agent(client, transport)
    try:
        await conn.initialize(protocol_version=1)
        yield conn, client
    finally:
        await conn.close()
