"""The key decoder and the line editor on their own: sequences cut between
reads, pastes, and the editing keys (the pty tests drive them end to end)."""

from __future__ import annotations

from agentrio.cli.line_editor import History, LineEditor
from agentrio.cli.terminal import (
    ALT_ENTER,
    DELETE,
    ESC,
    HOME,
    LEFT,
    UNKNOWN,
    UP,
    WORD_LEFT,
    KeyDecoder,
    Paste,
)


def feed(*chunks: str) -> list:
    decoder = KeyDecoder()
    return [key for chunk in chunks for key in decoder.feed(chunk)]


def test_sequences_cut_between_reads_are_whole_keys():
    assert feed("a\x1b[", "D") == ["a", LEFT]
    assert feed("\x1b[3", "~x") == [DELETE, "x"]
    assert feed("\x1b[1;5D") == [WORD_LEFT]
    assert feed("\x1bOH") == [HOME]
    assert feed("\x1b\r") == [ALT_ENTER]
    assert feed("\x1b") == [ESC]  # an Esc that ends a read is the Esc key


def test_an_escape_sequence_without_end_is_not_held_forever():
    decoder = KeyDecoder()
    assert decoder.feed("\x1b[") == []
    assert decoder.feed("1;" * 50) == [UNKNOWN]  # dropped, not held for a final letter that never comes
    assert decoder.feed("x") == ["x"]


def test_a_paste_is_one_key_even_across_reads_and_its_end_marker_cut_in_two():
    assert feed("x\x1b[200~one\r\ntw", "o\x1b[20", "1~y") == ["x", Paste("one\r\ntwo"), "y"]
    assert feed("\x1b[200~\x1b[A\r\x1b[201~") == [Paste("\x1b[A\r")]  # nothing in it is a key


def type_keys(editor: LineEditor, *keys) -> list[str]:
    sent = []
    for key in keys:
        if (line := editor.handle(key)) is not None:
            sent.append(line)
    return sent


def test_editing_keys(tmp_path):
    editor = LineEditor(History(tmp_path / "history"))
    assert type_keys(editor, *"hello world", "\x17", *"there", "\x01", "\x0b", "\x19", "\r") == [
        "hello there"
    ]
    assert type_keys(editor, *"ab", LEFT, LEFT, "\x04", "\r") == ["b"]  # Ctrl-D deletes under the cursor
    assert type_keys(editor, Paste("a\r\nb\x07"), "\r") == ["a\nb"]  # controls in a paste are dropped


def test_history_is_kept_between_editors_and_up_restores_the_draft(tmp_path):
    path = tmp_path / "data" / "history"
    editor = LineEditor(History(path))
    type_keys(editor, *"first", "\r", *"two\\", "\r", *"lines", "\r")
    editor = LineEditor(History(path))
    assert editor.history.entries == ["first", "two\nlines"]
    type_keys(editor, *"draft", UP)
    assert editor.text == "two\nlines"
    type_keys(editor, UP)  # within the recalled text: the line above
    assert editor.text == "two\nlines" and editor.cursor == 3
    type_keys(editor, UP, "\x0e", "\x0e", "\x0e")
    assert editor.text == "draft"


def test_an_unwritable_history_is_no_error(tmp_path):
    (tmp_path / "file").write_text("")
    editor = LineEditor(History(tmp_path / "file" / "history"))  # its folder is a file
    assert type_keys(editor, *"still works", "\r") == ["still works"]
