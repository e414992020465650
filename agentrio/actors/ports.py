"""Narrow ports: the few callables an agent's collaborators may use.

An activity, a tool batch or a running tool never holds the agent itself;
it gets one of these and can do exactly what its fields allow. A reader of
a collaborator's constructor therefore knows everything it can touch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import trio

from ..journal import Journal
from ..mailbox import Inbox
from ..messages import ToolCall
from ..models import BUILTIN_PRICES, Prices
from ..tools import Tool

if TYPE_CHECKING:
    from .agent import Agent
    from .spec import AgentSpec

#: ``emit(EventType, **fields)``: publish an event on the agent's stream.
Emit = Callable[..., None]


class AgentHost(Protocol):
    """What an agent needs of the supervisor that runs it (the Runtime):
    a way to start children under it, the registry of the agent tree, the
    nursery a root agent's actor runs in, and how long an idle agent stays
    awake (``None``: for good)."""

    registry: Any
    hibernate_after: float | None

    @property
    def nursery(self) -> trio.Nursery: ...

    async def create(
        self,
        spec: AgentSpec,
        session_id: str | None = None,
        parent: Agent | None = None,
        *,
        setup: Any = None,
    ) -> Agent: ...

    async def detach(self, *agents: Agent) -> None:
        """Forget ``agents`` once they are disposed (registry, session claims)."""


@attrs.frozen
class Approval:
    """The answer to an ``approval_request``."""

    decision: str
    reason: str | None = None


#: ``ask(call, tool, why) -> Approval``: emit an approval request for
#: ``call`` and wait for the answer that ``Agent.answer`` delivers.
Ask = Callable[[ToolCall, Tool, "str | None"], Awaitable[Approval]]


@attrs.frozen
class ActivityPorts:
    """What one activity may touch of its agent.

    ``journal`` and ``inbox`` are the agent's own; the activity runs in a task
    the agent owns, so it may change them. ``handle`` is the public agent,
    passed only to user hooks (``PreStep.agent`` and the like).
    """

    agent_id: str
    session_id: str
    spec: AgentSpec
    #: The live tool registry: a call is resolved against it when dispatched.
    tools: Mapping[str, Tool]
    journal: Journal
    inbox: Inbox
    emit: Emit
    ask: Ask
    #: Start a tool worker in the agent's nursery, which outlives the
    #: activity: a worker that ignores a cancel stays supervised.
    start_worker: Callable[..., None]
    #: Start a task of the agent's nursery that its starter waits for
    #: itself (a model stream, see ``stream_model``).
    start_actor: Callable[..., None]
    #: Start a child agent of this agent (for ``ToolContext.spawn_child``).
    spawn_child: Callable[..., AbstractAsyncContextManager[Agent]]
    handle: Agent
    #: ``on_failure(input_id)``: what a failed turn started by that input
    #: leaves in history, ``keep`` or ``rollback`` (see ``AgentSpec.on_failure``).
    on_failure: Callable[[str | None], str]
    #: The prices a run's usage is costed at: the spec's over the host's
    #: (``Runtime(prices=)``) over the built-in table.
    prices: Prices = BUILTIN_PRICES
