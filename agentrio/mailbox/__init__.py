"""How work reaches an actor: the bounded ``Mailbox``, and the agent's
``Inbox`` with its next-step and next-turn queues."""

from .inbox import Inbox, Input, as_queued, normalize_range
from .items import TARGETS, InboxSpliced, QueuedInput, SpliceReason, Target
from .mailbox import ActorStopped, Envelope, Mailbox, MailboxClosed

__all__ = [
    "TARGETS",
    "ActorStopped",
    "Envelope",
    "Inbox",
    "InboxSpliced",
    "Input",
    "Mailbox",
    "MailboxClosed",
    "QueuedInput",
    "SpliceReason",
    "Target",
    "as_queued",
    "normalize_range",
]
