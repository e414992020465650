"""What an agent's inbox holds, and the record of each change to it.

These types belong to the mailbox; the journal stores them.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import attrs

from ..messages import UserMessage

Target = Literal["next_step", "next_turn"]
TARGETS: tuple[Target, ...] = ("next_step", "next_turn")

#: Why the inbox changed. ``remove`` and ``clear`` discard input; a ``claim``
#: hands it to a turn.
SpliceReason = Literal["send", "claim", "remove", "clear", "restore", "replace"]
DISCARDING_REASONS = frozenset({"remove", "clear"})


@attrs.frozen
class QueuedInput:
    """A message waiting in the inbox; ``id`` is unique across both queues."""

    id: str
    message: UserMessage


@attrs.frozen
class InboxSpliced:
    """``queue[start:start + delete_count] = items`` on one queue, with the
    range already normalized."""

    target: Target
    start: int
    delete_count: int
    items: list[QueuedInput]
    reason: SpliceReason

    type: ClassVar[str] = "inbox_spliced"

    @property
    def discards(self) -> bool:
        return self.reason in DISCARDING_REASONS
