"""Who may write a session: leases with fencing tokens, for stores that
several runtimes share."""

from __future__ import annotations

import datetime

import attrs
import trio

from .store import SessionHeld, StoreError


class LeaseHeld(SessionHeld):
    """Another store holds the session's lease. ``holder`` names it and
    ``expires_at`` is when its lease ends unless renewed (the database's
    clock); ``remaining`` is the seconds until then, as the database saw it."""

    def __init__(self, session_id: str, holder: str, expires_at: datetime.datetime, remaining: float) -> None:
        self.session_id = session_id
        self.holder = holder
        self.expires_at = expires_at
        self.remaining = remaining
        super().__init__(
            f"session {session_id!r} is held by {holder}, whose lease ends at "
            f"{expires_at.isoformat(timespec='milliseconds')} (in {remaining:.1f} s) unless renewed"
        )


class LeaseLost(StoreError):
    """This store no longer holds the session: its lease ran out and another
    store took the session over. Nothing appended after the takeover was
    written, and nothing more will be."""


@attrs.define(eq=False)
class Lease:
    """A session held by a store. ``token`` is the fencing token every write
    carries: taking a session over increments it, so that the writes of a
    former holder are refused. ``lost`` is set once the store learns that
    the lease is gone (``error`` then says why).

    ``confirmed_until`` is the holder's own view of when the lease ends
    (``time.monotonic()``): a lease taken or renewed by a request sent at
    ``t`` runs to at least ``t + lease`` on the database's clock, so that
    the holder never thinks it holds a lease another may already take."""

    session_id: str
    holder: str
    token: int
    confirmed_until: float
    lost: trio.Event = attrs.field(factory=trio.Event)
    error: LeaseLost | None = None

    def confirm(self, until: float) -> None:
        self.confirmed_until = max(self.confirmed_until, until)
