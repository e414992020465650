"""Forks: a new session whose history is a prefix of another's."""

from __future__ import annotations

from collections.abc import Iterable

from .._ids import new_id
from ..messages import Message, unanswered_calls
from .projection import SessionState
from .records import Compacted, MessageAppended, Record, TurnEnded, TurnStarted
from .repair import repaired_history
from .store import LoadedSession, SessionInfo, Store


class ForkRefused(ValueError):
    """The cut asked for would not leave a history a run can go on from."""


def fork_seed(
    session_id: str,
    records: Iterable[Record],
    *,
    at_message: int | None = None,
    at_turn: int | None = None,
    repair: bool = False,
) -> list[Message]:
    """The history a fork of ``session_id`` starts from: its first
    ``at_message`` committed messages (of its history as it is now, compacted
    or not), or its history as it was at the end of turn ``at_turn`` (0:
    before its first turn). A cut inside a turn that is still open is
    refused, unless ``repair``: the open turn is then closed as crash repair
    would close it (its messages so far, every unanswered call answered) and
    the cut taken from that history. A cut that leaves tool calls unanswered
    is refused."""
    if (at_message is None) == (at_turn is None):
        raise TypeError("give exactly one of at_message and at_turn")
    state = SessionState()
    ended: set[int] = set()
    at_turn_history: list[Message] | None = None
    open_turn_start = 0
    for record in records:
        if isinstance(record, TurnStarted):
            if at_turn == 0 and at_turn_history is None:
                at_turn_history = list(state.messages)
            ended.add(0)
            open_turn_start = len(state.messages)
        elif isinstance(record, Compacted):
            # The turn's start moves with the kept tail; a summary of part
            # of the turn belongs to the turn.
            first_kept = record.first_kept
            open_turn_start = open_turn_start - first_kept + 1 if open_turn_start >= first_kept else 0
        state.apply(record)
        if isinstance(record, TurnEnded):
            ended.add(record.turn)
            if record.turn == at_turn:
                at_turn_history = list(state.messages)
    ended.add(0)
    repairing = repair and state.turn_open
    messages = repaired_history(state) if repairing else state.messages

    if at_turn is not None:
        if at_turn in ended:
            messages = at_turn_history if at_turn_history is not None else messages
            at_message = len(messages)
        elif repairing and at_turn == state.turn:
            at_message = len(messages)
        elif state.turn_open and at_turn == state.turn:
            raise ForkRefused(
                f"cannot fork session {session_id!r} at turn {at_turn}: the turn is still open; "
                "fork at an earlier turn or wait for it to end"
            )
        else:
            raise ForkRefused(
                f"session {session_id!r} has no turn {at_turn}; its ended turns are 0 to {max(ended)}"
            )
    assert at_message is not None  # given, or found above from at_turn
    if not 0 <= at_message <= len(messages):
        raise ForkRefused(
            f"at_message must be between 0 and {len(messages)} (the committed messages of "
            f"session {session_id!r}), got {at_message}"
        )
    if at_turn is None and state.turn_open and not repair and at_message > open_turn_start:
        raise ForkRefused(
            f"cannot fork session {session_id!r} at message {at_message}: it is inside turn "
            f"{state.turn}, which is still open; cut at message {open_turn_start} or before, "
            "or wait for the turn to end"
        )
    seed = messages[:at_message]
    if unanswered_calls(seed):
        raise ForkRefused(
            f"cannot fork session {session_id!r} at message {at_message}: the cut leaves tool "
            "calls without results; cut before the assistant message or after its results"
        )
    return seed


async def fork_session(
    store: Store,
    session_id: str,
    *,
    at_message: int | None = None,
    at_turn: int | None = None,
    fork_id: str | None = None,
    repair: bool = False,
    agent_name: str | None = None,
) -> LoadedSession:
    """Create the fork in ``store``; its info names its parent, how many
    messages it took, and ``agent_name`` (by default its parent's)."""
    source, records = await store.load_session(session_id)
    seed = fork_seed(session_id, records, at_message=at_message, at_turn=at_turn, repair=repair)
    info = SessionInfo(
        fork_id or new_id("session"),
        parent_session_id=session_id,
        seed_length=len(seed),
        agent_name=agent_name if agent_name is not None else source.agent_name,
    )
    seed_records = [MessageAppended(m) for m in seed]
    await store.create_session(info, seed_records)
    return LoadedSession(info, SessionState.replay(seed_records), len(seed_records))
