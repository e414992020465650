"""The live agents of a Runtime and their parent/child tree."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .lifecycle import Listener, RuntimeEvents

if TYPE_CHECKING:
    from ..actors.agent import Agent


class AgentRegistry:
    """The live agents of one Runtime, and who created whom.

    Every lookup is O(1) or O(answer): children are indexed by parent, so
    tearing down many agents stays linear.
    """

    def __init__(self) -> None:
        self._agents: dict[str, Agent] = {}
        #: Children by parent id, in creation order (dicts keep it).
        self._children: dict[str, dict[str, Agent]] = {}
        #: The runtime's lifecycle events (see ``lifecycle``).
        self.events = RuntimeEvents()

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` synchronously for every lifecycle event
        of this runtime's agents (``agent_created``, ``agent_ended``,
        ``agent_failed``, ``agent_restarted``); returns the function that
        stops it. The listener must not block or raise."""
        return self.events.listen(listener)

    def __contains__(self, agent_id: str) -> bool:
        return agent_id in self._agents

    def __len__(self) -> int:
        return len(self._agents)

    def get(self, agent_id: str) -> Agent | None:
        return self._agents.get(agent_id)

    @property
    def agents(self) -> tuple[Agent, ...]:
        """Live agents, oldest first."""
        return tuple(self._agents.values())

    def children(self, agent_id: str) -> tuple[Agent, ...]:
        """Live agents whose parent is ``agent_id``, oldest first."""
        return tuple(self._children.get(agent_id, {}).values())

    def path(self, agent_id: str) -> list[str]:
        """Agent ids from the root of ``agent_id``'s tree down to it."""
        path = [agent_id]
        while (agent := self._agents.get(path[0])) is not None and agent.parent_id is not None:
            path.insert(0, agent.parent_id)
        return path

    def add(self, agent: Agent) -> None:
        if agent.id in self._agents:
            raise ValueError(f"agent {agent.id!r} is already live in this runtime")
        self._agents[agent.id] = agent
        if agent.parent_id is not None:
            self._children.setdefault(agent.parent_id, {})[agent.id] = agent

    def remove(self, agent: Agent) -> None:
        if self._agents.pop(agent.id, None) is None:
            return
        if agent.parent_id is not None:
            siblings = self._children.get(agent.parent_id, {})
            siblings.pop(agent.id, None)
            if not siblings:
                self._children.pop(agent.parent_id, None)
