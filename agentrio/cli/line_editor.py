"""The line a person types in ``agentrio chat``: editing keys, history, paste.

``LineEditor`` is a state machine over the keys ``terminal.KeyDecoder``
gives, with no input or output of its own: ``handle(key)`` edits the text
and returns it when it is sent; ``render()`` draws it for the live region,
the cursor shown in reverse video. The keys are readline's: ←/→ (Ctrl-B/F),
Alt-←/→ (Alt-B/F) by word, Home/End (Ctrl-A/E), Backspace, Delete, Ctrl-W
and Alt-Backspace (the word before), Alt-D (the word after), Ctrl-U/Ctrl-K
(to the start/end of the line), Ctrl-Y (what was cut last), ↑/↓ (Ctrl-P/N:
the line above or below, else the history), Ctrl-R (search the history).
Enter sends; Alt-Enter, or Enter after a trailing backslash, starts a new
line; a bracketed paste is inserted whole, newlines and all, and sent only
by Enter.

``History`` keeps what was sent, across runs, in a file of JSON strings
(one a line) in the user's data directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from rich.text import Text

from .terminal import (
    ALT_BACKSPACE,
    ALT_D,
    ALT_ENTER,
    BACKSPACE,
    DELETE,
    DOWN,
    END,
    ENTER,
    ESC,
    HOME,
    LEFT,
    RIGHT,
    UP,
    WORD_LEFT,
    WORD_RIGHT,
    Paste,
)

#: Entries of the history kept (the file is rewritten to this many when it grows twice as long).
HISTORY_SIZE = 1000

CTRL = {letter: chr(ord(letter) - ord("a") + 1) for letter in "abdefgknpruwy"}


class History:
    """Lines sent before, oldest first; ``add`` appends to the file too.
    The history is a convenience: a file that cannot be read or written
    (a read-only home, say) leaves it empty or unsaved, never an error."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: list[str] = []
        if path is None:
            return
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, str):
                self.entries.append(entry)
        if len(self.entries) > 2 * HISTORY_SIZE:
            self.entries = self.entries[-HISTORY_SIZE:]
            self._write("".join(json.dumps(entry) + "\n" for entry in self.entries), "w")
        else:
            self.entries = self.entries[-HISTORY_SIZE:]

    def add(self, line: str) -> None:
        if not line.strip() or (self.entries and self.entries[-1] == line):
            return
        self.entries.append(line)
        self._write(json.dumps(line) + "\n", "a")

    def _write(self, text: str, mode: str) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open(mode, encoding="utf-8") as file:
                file.write(text)
            os.chmod(self.path, 0o600)  # what a person typed is theirs alone
        except OSError:
            pass


class LineEditor:
    """The text being typed and the cursor in it (see the module's doc)."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.text = ""
        self.cursor = 0
        self._cut = ""
        #: Where in the history ↑/↓ are; len(entries) is the line being typed.
        self._place = len(history.entries)
        self._draft = ""
        #: The Ctrl-R search: its query and the entry it found, or None when not searching.
        self._query: str | None = None
        self._found: int | None = None

    @property
    def searching(self) -> bool:
        return self._query is not None

    def clear(self) -> None:
        self.text, self.cursor = "", 0
        self._place = len(self.history.entries)
        self._query = self._found = None

    # -- keys ----------------------------------------------------------------------

    def handle(self, key: str | Paste) -> str | None:
        """Apply ``key``; the text when it is sent (Enter), else None."""
        if self._query is not None and self._search_key(key):
            return None
        if isinstance(key, Paste):
            self._insert(_pasted(key.text))
            return None
        if key in (ENTER, "\n"):
            return self._enter()
        action = _ACTIONS.get(key)
        if action is not None:
            action(self)
        elif len(key) == 1 and (key.isprintable() or key == "\t"):
            self._insert(key)
        return None

    def _enter(self) -> str | None:
        if self.cursor == len(self.text) and self.text.endswith("\\"):
            self.text, self.cursor = self.text[:-1] + "\n", len(self.text)
            return None
        line = self.text
        self.history.add(line)
        self.clear()
        return line

    def _insert(self, text: str) -> None:
        self.text = self.text[: self.cursor] + text + self.text[self.cursor :]
        self.cursor += len(text)

    def _cut_to(self, start: int, end: int) -> None:
        if start < end:
            self._cut = self.text[start:end]
            self.text = self.text[:start] + self.text[end:]
            self.cursor = start

    def _line_start(self) -> int:
        return self.text.rfind("\n", 0, self.cursor) + 1

    def _line_end(self) -> int:
        end = self.text.find("\n", self.cursor)
        return len(self.text) if end < 0 else end

    def _word_left(self) -> int:
        i = self.cursor
        while i > 0 and not self.text[i - 1].isalnum():
            i -= 1
        while i > 0 and self.text[i - 1].isalnum():
            i -= 1
        return i

    def _word_right(self) -> int:
        i = self.cursor
        while i < len(self.text) and not self.text[i].isalnum():
            i += 1
        while i < len(self.text) and self.text[i].isalnum():
            i += 1
        return i

    def _rubout(self) -> None:
        """Ctrl-W: back to the whitespace before the word behind the cursor."""
        i = self.cursor
        while i > 0 and self.text[i - 1].isspace():
            i -= 1
        while i > 0 and not self.text[i - 1].isspace():
            i -= 1
        self._cut_to(i, self.cursor)

    def _backspace(self) -> None:
        if self.cursor:
            self.text = self.text[: self.cursor - 1] + self.text[self.cursor :]
            self.cursor -= 1

    def _delete(self) -> None:
        self.text = self.text[: self.cursor] + self.text[self.cursor + 1 :]

    def _vertical(self, step: int) -> None:
        """↑/↓: the line above or below within the text, else the history's."""
        start = self._line_start()
        column = self.cursor - start
        if step < 0 and start > 0:
            above = self.text.rfind("\n", 0, start - 1) + 1
            self.cursor = min(above + column, start - 1)
        elif step > 0 and (end := self._line_end()) < len(self.text):
            below_end = self.text.find("\n", end + 1)
            below_end = len(self.text) if below_end < 0 else below_end
            self.cursor = min(end + 1 + column, below_end)
        else:
            self._recall(self._place + step)

    def _recall(self, place: int) -> None:
        entries = self.history.entries
        if not 0 <= place <= len(entries):
            return
        if self._place == len(entries):
            self._draft = self.text
        self._place = place
        self.text = entries[place] if place < len(entries) else self._draft
        self.cursor = len(self.text)

    # -- Ctrl-R ----------------------------------------------------------------------

    def _start_search(self) -> None:
        self._query, self._found = "", None

    def _search_key(self, key: str | Paste) -> bool:
        """A key while searching; False when it ends the search and is still to be handled."""
        if key == CTRL["r"]:
            self._search(before=self._found)
        elif key in BACKSPACE:
            self._query = (self._query or "")[:-1]
            self._search(before=None)
        elif isinstance(key, str) and len(key) == 1 and key.isprintable():
            self._query = (self._query or "") + key
            self._search(before=None)
        elif key in (ESC, CTRL["g"]):
            self._query = self._found = None
        else:
            if self._found is not None:
                self.text = self.history.entries[self._found]
                self.cursor = len(self.text)
                self._place = self._found
            self._query = self._found = None
            # Enter takes the match into the line (to edit or send); a move goes on to move in it.
            return key not in (LEFT, RIGHT, HOME, END, CTRL["a"], CTRL["e"])
        return True

    def _search(self, before: int | None) -> None:
        """The latest entry holding the query, older than ``before`` when given."""
        entries = self.history.entries
        start = len(entries) if before is None else before
        for place in range(start - 1, -1, -1):
            if self._query and self._query in entries[place]:
                self._found = place
                return
        if before is None:
            self._found = None

    # -- drawing ---------------------------------------------------------------------

    def render(self, prompt: str = "› ") -> list[Text]:
        """The text as lines for the live region, the cursor drawn in reverse."""
        if self._query is not None:
            line = Text(f"(search) {self._query}", style="bold cyan")
            line.append("▏", style="dim")
            if self._found is not None:
                line.append("  " + self.history.entries[self._found].replace("\n", " ⏎ "), style="dim")
            elif self._query:
                line.append("  no match", style="dim")
            return [line]
        lines: list[Text] = []
        offset = 0
        for number, part in enumerate(self.text.split("\n")):
            line = Text(prompt if number == 0 else " " * len(prompt), style="bold cyan")
            line.append(part)
            if offset <= self.cursor <= offset + len(part):
                at = len(prompt) + self.cursor - offset
                if self.cursor == offset + len(part):
                    line.append(" ")
                line.stylize("reverse", at, at + 1)
            offset += len(part) + 1
            lines.append(line)
        return lines


def _pasted(text: str) -> str:
    """Pasted text as it is inserted: newlines as ``\\n``, other controls dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(char for char in text if char.isprintable() or char in "\n\t")


#: What a key does to the editor; a place in its text, for a key that moves or cuts.
_Action = Callable[[LineEditor], None]
_Place = Callable[[LineEditor], int]


def _move(where: _Place) -> _Action:
    def action(editor: LineEditor) -> None:
        editor.cursor = where(editor)

    return action


def _cut(start: _Place, end: _Place) -> _Action:
    def action(editor: LineEditor) -> None:
        editor._cut_to(start(editor), end(editor))

    return action


_ACTIONS: dict[str, _Action] = {
    LEFT: _move(lambda e: max(e.cursor - 1, 0)),
    CTRL["b"]: _move(lambda e: max(e.cursor - 1, 0)),
    RIGHT: _move(lambda e: min(e.cursor + 1, len(e.text))),
    CTRL["f"]: _move(lambda e: min(e.cursor + 1, len(e.text))),
    WORD_LEFT: _move(LineEditor._word_left),
    WORD_RIGHT: _move(LineEditor._word_right),
    HOME: _move(LineEditor._line_start),
    CTRL["a"]: _move(LineEditor._line_start),
    END: _move(LineEditor._line_end),
    CTRL["e"]: _move(LineEditor._line_end),
    BACKSPACE[0]: LineEditor._backspace,
    BACKSPACE[1]: LineEditor._backspace,
    DELETE: LineEditor._delete,
    CTRL["d"]: LineEditor._delete,
    CTRL["w"]: LineEditor._rubout,
    ALT_BACKSPACE: _cut(LineEditor._word_left, lambda e: e.cursor),
    ALT_D: _cut(lambda e: e.cursor, LineEditor._word_right),
    CTRL["u"]: _cut(LineEditor._line_start, lambda e: e.cursor),
    CTRL["k"]: _cut(lambda e: e.cursor, LineEditor._line_end),
    CTRL["y"]: lambda e: e._insert(e._cut),
    UP: lambda e: e._vertical(-1),
    CTRL["p"]: lambda e: e._vertical(-1),
    DOWN: lambda e: e._vertical(1),
    CTRL["n"]: lambda e: e._vertical(1),
    ALT_ENTER: lambda e: e._insert("\n"),
    CTRL["r"]: LineEditor._start_search,
}
