"""For an agent whose store is shared across hosts (``PostgresStore``): take
in the input posted for its session anywhere."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeGuard

from ..actors.agent import Agent, AgentDisposed
from ..journal import LeaseLost, RemoteInput, Store, StoreError
from ..journal.remote import inbox_id
from ..mailbox.items import InboxSpliced, QueuedInput

if TYPE_CHECKING:
    from ..journal.ownership import Lease

log = logging.getLogger(__name__)


class RemoteStore(Store, Protocol):
    """A store that takes input posted from other processes (``PostgresStore``)."""

    async def next_inputs(self, session_id: str) -> list[RemoteInput]: ...

    async def consume_inputs(self, session_id: str, ids: Sequence[int]) -> None: ...

    def lease(self, session_id: str) -> Lease | None: ...


def takes_remote_input(store: object) -> TypeGuard[RemoteStore]:
    return all(hasattr(store, name) for name in ("next_inputs", "consume_inputs", "lease"))


def queued_id(item: RemoteInput) -> str:
    """The inbox id of a posted input: the journal says whether it was taken in."""
    return inbox_id(item.id)


async def serve_remote(agent: Agent, store: RemoteStore) -> None:
    """Runs for the agent's life, in its own scope. Each posted input is
    applied through the agent's public methods, in order, then consumed:
    the deletion commits with the agent's next records. An input whose
    records were committed by a former holder that died before the deletion
    was is recognised by its inbox id and only consumed, so each input is
    taken in once. With the lease lost it stops taking input."""
    try:
        await _take_inputs(agent, store, agent.session_id)
    except (LeaseLost, AgentDisposed):
        pass  # the agent's next barrier meets the lost lease; or it is torn down
    except StoreError as exc:
        # Input stays posted for the next holder; the agent's own writes
        # meet the same error at their barrier.
        log.warning("agent %s: no longer taking remote input: %s", agent.id, exc)


async def stop_on_lost_lease(agent: Agent, store: RemoteStore) -> None:
    """Runs for the agent's life, in its own scope: the moment the store
    knows that another host took the session over, the agent's work is
    cancelled (cause ``lease_lost``), so that no tool of it goes on acting
    for a session it no longer owns. Its run then ends ``error`` naming
    ``LeaseLost``, since nothing it writes is taken."""
    lease = store.lease(agent.session_id)
    if lease is None:
        return
    await lease.lost.wait()
    try:
        await agent.cancel("lease_lost", keep_inbox=True)
    except AgentDisposed:
        pass


async def _take_inputs(agent: Agent, store: RemoteStore, session_id: str) -> None:
    taken: set[str] | None = None
    while True:
        items = await store.next_inputs(session_id)
        if taken is None:
            # The first inputs may be left by a holder that died between
            # committing an input's records and deleting the input.
            taken = await _taken_in(store, session_id)
        for item in items:
            if queued_id(item) not in taken:
                await _apply(agent, item)
            await store.consume_inputs(session_id, [item.id])


async def _taken_in(store: RemoteStore, session_id: str) -> set[str]:
    _, records = await store.load_session(session_id)
    return {
        queued.id
        for record in records
        if isinstance(record, InboxSpliced)
        for queued in record.items
        if queued.id.startswith("remote_")
    }


async def _apply(agent: Agent, item: RemoteInput) -> None:
    if item.kind == "cancel":
        await agent.cancel()
        return
    assert item.message is not None  # (every kind but cancel has one)
    queued = QueuedInput(queued_id(item), item.message)
    if item.kind == "steer":
        await agent.steer(queued)
    elif item.kind == "followup":
        await agent.followup(queued)
    else:
        await agent.inject(queued)
