"""What a supervisor reports: restarts, exits it lets stand, and escalations.

Each event carries the supervisor's name, ``seq`` (strictly increasing per
supervisor) and ``time`` (trio's clock). Events round-trip through
``agentrio.messages.converter`` as the ``SupervisorEvent`` union, tagged by
``type``. Errors travel as text (``"ValueError: boom"``), the way a log or a
UI shows them.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from ..messages import register_tagged_union


@attrs.frozen(kw_only=True)
class _SupervisorEvent:
    supervisor: str
    seq: int
    time: float


@attrs.frozen(kw_only=True)
class ChildRestart(_SupervisorEvent):
    """``child_id`` ended and the supervisor restarts ``restarting`` (in start
    order, ``child_id`` among them). Emitted before they are stopped and
    started again."""

    child_id: str
    #: How the child ended; None for a normal return (a ``permanent`` child).
    error: str | None
    restarting: list[str]
    #: Restarts in the current window, this one included.
    restarts: int

    type: ClassVar[str] = "child_restart"


@attrs.frozen(kw_only=True)
class ChildExit(_SupervisorEvent):
    """``child_id`` ended and no restart follows for it: its restart policy
    says so, or the supervisor was closing, or it failed while the supervisor
    stopped it (for a restart of its siblings, or to close)."""

    child_id: str
    error: str | None

    type: ClassVar[str] = "child_exit"


@attrs.frozen(kw_only=True)
class Escalation(_SupervisorEvent):
    """``child_id`` ended once more than the restart intensity allows: the
    supervisor stops every child and raises ``SupervisorEscalation`` to its
    owner."""

    child_id: str
    error: str | None
    #: The allowed restarts, all used within the window.
    max_restarts: int
    within: float

    type: ClassVar[str] = "escalation"


SupervisorEvent = ChildRestart | ChildExit | Escalation

register_tagged_union(SupervisorEvent, "type")
