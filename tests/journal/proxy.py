"""A TCP proxy on loopback in front of a PostgreSQL server's Unix socket,
for a test to partition a store from its database: ``stall()`` holds every
byte in both directions (the connections stay open, as behind a dead
router), ``cut()`` closes every connection, ``heal()`` lets bytes and new
connections through again."""

from __future__ import annotations

from pathlib import Path

import trio


class Proxy:
    def __init__(self, target: Path) -> None:
        self._target = target
        self._flowing = trio.Event()
        self._flowing.set()
        self._connections: set[trio.CancelScope] = set()
        self.port = 0

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._relay, listeners)

    def dsn(self, database: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={database}"

    def stall(self) -> None:
        self._flowing = trio.Event()

    def cut(self) -> None:
        for scope in self._connections:
            scope.cancel()

    def heal(self) -> None:
        self._flowing.set()

    async def _relay(self, client: trio.SocketStream) -> None:
        with trio.CancelScope() as scope:
            self._connections.add(scope)
            try:
                await self._flowing.wait()
                try:
                    server = await trio.open_unix_socket(str(self._target))
                except OSError:
                    await client.aclose()
                    return
                async with client, server, trio.open_nursery() as nursery:
                    nursery.start_soon(self._pump, client, server, nursery.cancel_scope)
                    nursery.start_soon(self._pump, server, client, nursery.cancel_scope)
            finally:
                self._connections.discard(scope)

    async def _pump(self, source, sink, scope: trio.CancelScope) -> None:
        try:
            async for chunk in source:
                await self._flowing.wait()
                await sink.send_all(chunk)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        scope.cancel()  # one side ended: so does the connection
