"""Which children a restart takes, whether an exit calls for one, and how
many restarts a supervisor allows before it gives up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

#: Picks the children to restart: given how many children there are and the
#: index (in start order) of the one that ended, the indices to stop and
#: start again.
Strategy = Callable[[int, int], range]


def one_for_one(children: int, ended: int) -> range:
    """Restart only the child that ended."""
    return range(ended, ended + 1)


def one_for_all(children: int, ended: int) -> range:
    """Restart every child: for children that cannot work without each other."""
    return range(children)


def rest_for_one(children: int, ended: int) -> range:
    """Restart the child that ended and every child started after it: for
    children that depend on those started before them."""
    return range(ended, children)


#: Erlang's restart types. ``permanent``: restarted whenever it ends;
#: ``transient``: restarted only when it fails (raises); ``temporary``: never
#: restarted, not even when a sibling's restart stops it.
RestartPolicy = Literal["permanent", "transient", "temporary"]
RESTART_POLICIES = ("permanent", "transient", "temporary")


def calls_for_restart(policy: RestartPolicy, error: BaseException | None) -> bool:
    """Whether a child with ``policy`` that ended with ``error`` (None for a
    normal return) is restarted."""
    return policy == "permanent" or (policy == "transient" and error is not None)


class RestartIntensity:
    """At most ``max_restarts`` restarts within any ``within`` seconds."""

    def __init__(self, max_restarts: int, within: float) -> None:
        if max_restarts < 0:
            raise ValueError(f"max_restarts must be 0 or more, got {max_restarts!r}")
        if not within > 0:
            raise ValueError(f"within must be positive, got {within!r}")
        self.max_restarts = max_restarts
        self.within = within
        # A list, not a deque: it holds at most max_restarts + 1 times, and an
        # empty deque costs every agent ~600 bytes.
        self._times: list[float] = []

    @property
    def recent(self) -> int:
        """Restarts counted in the current window."""
        return len(self._times)

    def admit(self, now: float) -> bool:
        """Count a restart at ``now`` if the window has room for it; False
        (and nothing counted) when it would be one too many."""
        while self._times and now - self._times[0] >= self.within:
            self._times.pop(0)
        if len(self._times) >= self.max_restarts:
            return False
        self._times.append(now)
        return True
