"""The agent's inbox and its splice / claim semantics."""

from ..journal.records import QueuedInput, Target
from .inbox import Inbox, normalize_range

__all__ = ["Inbox", "QueuedInput", "Target", "normalize_range"]
