"""ACP over stdin/stdout: one JSON-RPC message per line."""

from __future__ import annotations

import os
import sys

import trio

from .acp.jsonrpc import MessageTooLarge
from .acp.server import AcpConnection
from .acp.sessions import SessionHub

#: Seconds a message may take to leave on stdout before the editor counts as gone.
STDIO_STALL_TIMEOUT = 300.0
#: Longest line read from stdin; a longer one is skipped and answered with a parse error.
MAX_LINE = 16 * 1024 * 1024


class LineTransport:
    """Newline-delimited messages over a pair of byte streams."""

    def __init__(self, receive: trio.abc.ReceiveStream, send: trio.abc.SendStream) -> None:
        self._receive = receive
        self._send_stream = send
        self._buffer = bytearray()
        #: Whether the line being read is too long, and is being skipped.
        self._skipping = False

    async def receive(self) -> str | None:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                if self._skipping:
                    self._skipping = False
                    return MessageTooLarge(f"a message longer than {MAX_LINE} bytes")
                if line.strip():
                    return line.decode("utf-8", errors="replace")
                continue
            if len(self._buffer) > MAX_LINE:
                self._skipping = True
                self._buffer.clear()
            data = await self._receive.receive_some(65536)
            if not data:
                return None
            self._buffer += data

    async def send(self, text: str) -> None:
        await self._send_stream.send_all(text.encode() + b"\n")


async def serve_stdio(hub: SessionHub) -> None:
    """Serve one client on this process's stdin and stdout until stdin ends."""
    stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    stdout = trio.lowlevel.FdStream(os.dup(sys.stdout.fileno()))
    # The protocol owns the real stdout now; a stray print goes to stderr.
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    async with stdin, stdout:
        # The only client of the process is dropped, and the process ends,
        # only if it stops reading altogether: an editor may be busy a while.
        connection = AcpConnection(hub, LineTransport(stdin, stdout), stall_timeout=STDIO_STALL_TIMEOUT)
        await connection.run()
