"""What became of each input of a session, read from its journal.

An input's outcome is not a record of its own: the journal already says it.
The inbox splice that claims the input names it (by its place in the queue),
and the ``TurnEnded`` that closes the turn which claimed it gives the stop
reason and the error; the text is that of the turn's last assistant message.
A turn that crash repair closed (cause ``repair.CRASH``), or that a runtime
giving the session up cancelled (cause ``RELEASED``), answers nothing: its
input waits for the turn that continues it. So whichever runtime ran the
turn, and however many crashed on the way, the outcome is in the journal
once the answering turn's records are committed, and reading it needs
nothing but the records.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Final

import attrs
import trio

from ..mailbox.items import InboxSpliced
from ..messages import AssistantMessage
from .projection import SessionState
from .records import MessageAppended, Record, TurnEnded
from .repair import CRASH

#: The cancel cause of a turn cut short by a runtime that gave its session
#: up (a worker stopping): whoever runs the session next continues it.
RELEASED: Final = "released"

#: Turns that end this way are continued, not answered.
CONTINUED = frozenset({CRASH, RELEASED})

#: The error of an input removed from the inbox before any turn took it.
WITHDRAWN = "the input was withdrawn before a turn took it in"


@attrs.frozen
class Outcome:
    """How the turn that answered an input ended: its stop reason (as
    ``RunResult.stop_reason``), the text of its last assistant message, and
    its error when the stop reason is one."""

    stop_reason: str
    text: str
    error: str | None = None


class Outcomes:
    """Follows a session's records, in order from the first, and collects the
    outcome of every input (by inbox id) whose answering turn has ended."""

    def __init__(self) -> None:
        self._state = SessionState()
        #: Inputs taken in by turns that have not ended (or that crash repair
        #: closed), in order.
        self._claimed: list[str] = []
        #: The text of the last assistant message since the last answer.
        self._text = ""
        self.answered: dict[str, Outcome] = {}
        #: Inputs answered more than once (a journal no correct agent writes).
        self.twice: list[str] = []

    def feed(self, records: list[Record]) -> None:
        for record in records:
            match record:
                case InboxSpliced(target=target, start=start, delete_count=count, reason=reason):
                    removed = [q.id for q in self._state.queue(target)[start : start + count]]
                    if reason == "claim":
                        self._claimed += removed
                    elif record.discards:
                        for input_id in removed:
                            self._answer(input_id, Outcome("aborted", "", WITHDRAWN))
                case MessageAppended(message=AssistantMessage() as message):
                    self._text = message.text
                case TurnEnded(cancel_cause=cause) if cause not in CONTINUED:
                    outcome = Outcome(record.stop_reason, self._text, record.error)
                    for input_id in self._claimed:
                        self._answer(input_id, outcome)
                    self._claimed, self._text = [], ""
            self._state.apply(record)

    def _answer(self, input_id: str, outcome: Outcome) -> None:
        if input_id in self.answered:
            self.twice.append(input_id)
        self.answered[input_id] = outcome

    @property
    def state(self) -> SessionState:
        """The session as the records fed so far project it."""
        return self._state

    @property
    def unfinished(self) -> bool:
        """Whether input was taken in by a turn that has not answered it: in
        a restored session, a turn that a crash or a release cut short, to be
        continued (``Agent.resume(continue_turn=True)``)."""
        return bool(self._claimed)

    @property
    def queued(self) -> bool:
        """Whether input waits in the session's inbox."""
        return bool(self._state.next_turn or self._state.next_step)


async def wait_outcome(
    next_records: Callable[[str, int], Awaitable[list[tuple[int, Record]]]],
    session_id: str,
    input_id: str,
    timeout: float | None,
) -> Outcome:
    """The outcome of input ``input_id`` of the session, once its answering
    turn's records are committed, following them with ``next_records``
    (``PostgresStore.next_records``: woken by the commits, never polling).
    ``TimeoutError`` after ``timeout`` seconds."""
    outcomes, after = Outcomes(), 0
    with trio.move_on_after(math.inf if timeout is None else timeout):
        while True:
            records = await next_records(session_id, after)
            outcomes.feed([record for _, record in records])
            after = records[-1][0]
            if (outcome := outcomes.answered.get(input_id)) is not None:
                return outcome
    raise TimeoutError(f"session {session_id!r}: input {input_id!r} got no outcome within {timeout} s")
