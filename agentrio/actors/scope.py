"""An agent's scope: what lives exactly as long as the agent."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any, TypeVar

import trio

T = TypeVar("T")


class AgentScope:
    """Handed to ``setup(agent, scope)``. Context managers entered here are
    exited when the agent is torn down (or at once if setup fails), after its
    last activity; ``nursery`` runs background tasks for the agent's life."""

    def __init__(self, stack: AsyncExitStack, nursery: trio.Nursery) -> None:
        self._stack = stack
        self.nursery = nursery

    async def enter_async_context(self, cm: AbstractAsyncContextManager[T]) -> T:
        return await self._stack.enter_async_context(cm)

    def push_async_callback(
        self, callback: Callable[..., Awaitable[object]], /, *args: Any, **kwargs: Any
    ) -> None:
        """Call ``await callback(*args, **kwargs)`` when the scope closes."""
        self._stack.push_async_callback(callback, *args, **kwargs)
