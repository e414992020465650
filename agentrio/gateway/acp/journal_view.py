"""A session's journal as ACP ``session/update`` payloads, for a client that
follows a session another process runs (see ``remote``).

Pure mapping, as ``updates`` is: what the records show, not whom to tell.
The journal holds what was committed, not the tokens as they streamed: a
message is shown whole once it is committed, a tool call goes ``pending``
with the assistant message that asks for it, ``in_progress`` when its start
is recorded, and ``completed`` or ``failed`` with its result.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...journal.outcomes import Outcomes
from ...journal.projection import SessionState
from ...journal.records import (
    MessageAppended,
    Record,
    SessionRenamed,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from ...mailbox.items import InboxSpliced
from ...messages import ToolCall, UserMessage
from .updates import ToolCallView, history_updates, status_update


class JournalView:
    """Follows one session's records, in order from its first (``feed``),
    and says what each new one shows a client; ``replay`` shows the session
    as the records fed so far leave it. ``outcomes`` says what became of
    each input, as ``store.outcome`` would.

    A user message that the client itself sent (``own``) is not shown to it
    again when a turn takes it in, as a local session does not echo a
    client's own prompt."""

    def __init__(self, cwd: Path) -> None:
        self.outcomes = Outcomes()
        #: The sequence number of the last record fed.
        self.seq = 0
        #: User messages this view's client sent that no turn has taken in yet.
        self.own: list[UserMessage] = []
        self._view = ToolCallView(cwd)
        self._calls: dict[str, ToolCall] = {}

    @property
    def state(self) -> SessionState:
        return self.outcomes.state

    def feed(self, records: Sequence[tuple[int, Record]]) -> list[dict[str, Any]]:
        """Take ``records`` (the next ones, with their sequence numbers) in;
        the updates they show."""
        updates: list[dict[str, Any]] = []
        for seq, record in records:
            self.outcomes.feed([record])
            self.seq = seq
            updates += self._updates(record)
        return updates

    def _updates(self, record: Record) -> list[dict[str, Any]]:
        match record:
            case MessageAppended(message=UserMessage() as message) if message in self.own:
                self.own.remove(message)
                return []
            case MessageAppended(message=message):
                return list(history_updates((message,), self._view, self._calls))
            case ToolCallStarted(tool_call_id=call_id):
                return [{"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"}]
            case InboxSpliced() | TurnStarted() | TurnEnded():
                return [self.status()]
            case SessionRenamed(title=title):
                return [{"sessionUpdate": "session_info_update", "title": title}]
        return []

    def status(self) -> dict[str, Any]:
        """The session's status, queued prompts and usage, as the records fed so far say."""
        state = self.state
        status = "running" if state.turn_open else "idle"
        # ``remote``: another process runs it (replies come whole, not streamed).
        return status_update(status, [*state.next_step, *state.next_turn], state.usage, remote=True)

    def replay(self) -> Iterator[dict[str, Any]]:
        """The updates that show the session as the records fed so far leave
        it: its history (the open step's messages included), the calls
        running, its status. History's updates are made as they are taken,
        from the history as it is now."""
        state = self.state
        messages = (*state.messages, *state.step_messages)
        running = [
            {"sessionUpdate": "tool_call_update", "toolCallId": c.id, "status": "in_progress"}
            for c in state.open_calls()
            if c.id in state.started_calls
        ]
        return itertools.chain(history_updates(messages, self._view), running, [self.status()])
