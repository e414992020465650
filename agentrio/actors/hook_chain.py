"""Hook chains: a ``Hooks`` field may hold several listeners.

Two ways to run them, as the seed's plugin hooks do (dsh 7.5, 7.7, 7.11):

- waterfall, for a hook that transforms a value (``prepare_context``,
  ``pre_step``, ``on_request_error``, ``post_tool``): each listener gets the
  value the one before it left, so several plugins compose;
- serial with bail, for a hook that answers (``choose_model``,
  ``on_protocol_violation``, ``turn_stopping``, ``on_assistant_stream``):
  listeners run in order until one answers something other than None; the
  rest are not called. An observer that returns None never stops the chain.

Each call site runs its own waterfall (what a listener gets differs per
hook); ``listeners`` and ``bail`` are what they share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import _callbacks

#: A ``Hooks`` field: one listener, a chain of them, or None.
Hook = Callable[..., Any] | Sequence[Callable[..., Any]] | None


def listeners(hook: Hook) -> tuple[Callable[..., Any], ...]:
    """The listeners of a ``Hooks`` field, in order (none for None)."""
    if hook is None:
        return ()
    if callable(hook):
        return (hook,)
    return tuple(hook)  # (the field's converter made it a tuple: this one)


async def bail(hook: Hook, *args: Any) -> Any:
    """Serial with bail: the first answer that is not None, else None."""
    for listener in listeners(hook):
        answer = await _callbacks.call(listener, *args)
        if answer is not None:
            return answer
    return None
