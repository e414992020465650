from __future__ import annotations

import os
from contextlib import asynccontextmanager

import pytest
import trio

from agentrio import Runtime
from agentrio.actors import ownership
from agentrio.events import Event

from .pgcluster import Cluster, ServerMissing

# The suite runs with the actors' ownership checks on: any agent state
# changed outside the agent's own tasks fails the test that did it.
ownership.CHECKS = True


class Recorder:
    """The events an agent emitted while recording; reading drains them."""

    def __init__(self, channel: trio.MemoryReceiveChannel[Event]) -> None:
        self._channel = channel
        self._events: list[Event] = []

    @property
    def events(self) -> list[Event]:
        self.drain()
        return self._events

    def drain(self) -> None:
        """Take every event delivered so far."""
        while True:
            try:
                self._events.append(self._channel.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                return

    def types(self, *, skip=("message_update", "state", "inbox", "status")) -> list[str]:
        return [e.type for e in self.events if e.type not in skip]

    def states(self) -> list[str]:
        return [e.name for e in self.events if e.type == "state"]

    def of(self, event_type: str) -> list[Event]:
        return [e for e in self.events if e.type == event_type]


@asynccontextmanager
async def record(agent):
    async with agent.subscribe() as channel:
        recorder = Recorder(channel)
        yield recorder
        recorder.drain()  # before the subscription closes


@pytest.fixture
async def rt():
    async with Runtime() as runtime:
        yield runtime


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server of the tests' own for the whole test session
    (each test makes a database of its own on it)."""
    try:
        cluster = Cluster.start(fsync=False)
    except ServerMissing as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the PostgreSQL store: {exc}", pytrace=False)
        pytest.skip(str(exc))
    yield cluster
    cluster.stop()
