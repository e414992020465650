from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from agentrio.supervisors import ChildSpec


class Boom(Exception):
    pass


class Workers:
    """Children that log their life (``start``, ``up``, ``stop`` when the
    supervisor stops them, ``fail`` and ``return`` when they end on their
    own) and end when a test tells them to."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self._ends: dict[str, trio.MemorySendChannel] = {}
        self.startup = 0.0  # seconds each start takes before the child is up
        self.failing_starts: dict[str, int] = {}  # child id -> starts left that fail
        self.failing_stops: set[str] = set()  # children that raise when stopped

    def spec(self, child_id: str, **options) -> ChildSpec:
        return ChildSpec(child_id, lambda task_status: self._run(child_id, task_status), **options)

    async def _run(self, child_id: str, task_status) -> str:
        self.log.append(("start", child_id))
        if self.startup:
            await trio.sleep(self.startup)
        if self.failing_starts.get(child_id):
            self.failing_starts[child_id] -= 1
            self.log.append(("fail", child_id))
            raise Boom(f"{child_id} cannot start")
        send, receive = trio.open_memory_channel(1)
        self._ends[child_id] = send
        self.log.append(("up", child_id))
        task_status.started(f"{child_id} is up")
        try:
            how = await receive.receive()
        except trio.Cancelled:
            self.log.append(("stop", child_id))
            if child_id in self.failing_stops:
                raise Boom(f"{child_id} failed to stop") from None
            raise
        self.log.append((how, child_id))
        if how == "fail":
            raise Boom(f"{child_id} failed")

    def tell(self, child_id: str, how: str) -> None:
        """Make ``child_id`` end: ``fail`` (raise) or ``return``."""
        self._ends[child_id].send_nowait(how)

    async def fail(self, child_id: str) -> None:
        """Make ``child_id`` raise, and let the supervisor act on it."""
        self.tell(child_id, "fail")
        await wait_all_tasks_blocked()

    async def finish(self, child_id: str) -> None:
        """Make ``child_id`` return, and let the supervisor act on it."""
        self.tell(child_id, "return")
        await wait_all_tasks_blocked()

    def since(self, mark: int) -> list[tuple[str, str]]:
        return self.log[mark:]


@pytest.fixture
def workers() -> Workers:
    return Workers()


@pytest.fixture
def events() -> list:
    """Pass ``on_event=events.append``."""
    return []
