"""A session's journal as a transcript people can read."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator

from ..journal import SessionInfo, SessionState
from ..journal.records import Compacted, MessageAppended, Record, SessionRenamed, TurnEnded, TurnStarted
from ..messages import (
    AssistantMessage,
    Document,
    Image,
    Message,
    Part,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

#: Lines of a tool result shown unless the whole transcript is asked for.
RESULT_LINES = 12


def cost_text(usage: Usage) -> str:
    """`` · $0.0123`` for a usage of known cost; nothing when it is unknown."""
    return "" if usage.cost is None else f" · ${usage.cost:.4f}"


def timestamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def transcript(info: SessionInfo, records: Iterable[Record], *, full: bool = False) -> Iterator[str]:
    """Turns, messages, tool calls with their arguments, results and errors,
    stop reasons, compactions with their summaries (the messages a summary
    replaced are shown where they were written); then what is still pending
    and the session's usage."""
    yield f"session {info.session_id}, created {timestamp(info.created_at)}"
    if info.parent_session_id is not None:
        yield f"forked from {info.parent_session_id} with its first {info.seed_length} messages"
    yield f"[N] numbers the messages: agentrio sessions fork {info.session_id} --at N keeps the first N"
    state = SessionState()
    for record in records:
        state.apply(record)
        match record:
            case TurnStarted(turn=turn):
                yield ""
                yield f"--- turn {turn} ---"
            case MessageAppended(message=message):
                number = len(state.messages) + len(state.step_messages)
                yield from _message(message, full, f"[{number}] ")
            case TurnEnded(turn=turn, stop_reason=stop_reason):
                yield f"--- turn {turn} ended: {stop_reason} ---"
            case Compacted():
                yield (
                    f"--- compacted ({record.reason}): the first {record.first_kept} messages of history "
                    f"replaced by a summary, about {record.tokens_before} -> {record.tokens_after} tokens ---"
                )
                yield "(the numbers from here count the history as it is now, the summary as [1])"
                yield from _block("summary: ", _cut(record.summary.text, full))
    yield ""
    if state.turn_open:
        yield f"turn {state.turn} has not ended (it is running, or was interrupted)"
    for queue, pending in (("next step", state.next_step), ("next turn", state.next_turn)):
        for queued in pending:
            yield from _block(f"pending for the {queue}: ", queued.message.text)
    usage = state.usage
    yield (
        f"usage: {usage.input_tokens} input, {usage.output_tokens} output, "
        f"{usage.cache_read_tokens} cache read, {usage.cache_write_tokens} cache write tokens{cost_text(usage)}"
    )


def spent(records: Iterable[Record]) -> float | None:
    """What a session's model requests cost in US dollars (its answers and
    its compactions' summaries); None while any of them has no known price."""
    usage = Usage()
    for record in records:
        if isinstance(record, MessageAppended) and isinstance(record.message, AssistantMessage):
            usage += record.message.usage
        elif isinstance(record, Compacted):
            usage += record.usage
    return usage.cost


def title(records: Iterable[Record], limit: int = 50) -> str:
    """What a session is about: the title it was last renamed to, else the
    first line of its first prompt ("" before there is one)."""
    first = renamed = None
    for record in records:
        if isinstance(record, SessionRenamed):
            renamed = record.title
        elif (
            first is None and isinstance(record, MessageAppended) and isinstance(record.message, UserMessage)
        ):
            lines = [line for line in record.message.text.splitlines() if line.strip()]
            first = " ".join(lines[0].split()) if lines else ""
    text = renamed if renamed is not None else first or ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _message(message: Message, full: bool, number: str) -> Iterator[str]:
    if isinstance(message, AssistantMessage):
        yield from _assistant(message, number)
    elif isinstance(message, ToolResultMessage):
        status = " error" if message.is_error else ""
        yield from _block(
            f"{number}  <- {message.tool_name} ({message.tool_call_id}){status}: ",
            _cut(message.text, full) + _media(message.content),
        )
    else:
        yield from _block(f"{number}user: ", message.text + _media(message.content))


def _media(content: str | list[Part]) -> str:
    """A note of each image and document: their bytes are not text to show."""
    if isinstance(content, str):
        return ""
    return "".join(f"\n{_media_note(part)}" for part in content if isinstance(part, Image | Document))


def _media_note(part: Image | Document) -> str:
    name = f" {part.name}" if isinstance(part, Document) and part.name else ""
    return f"[{part.media_type}{name}, {len(part.data):,} bytes]"


def _assistant(message: AssistantMessage, number: str) -> Iterator[str]:
    label = (
        "assistant" if message.stop_reason in ("stop", "tool_use") else f"assistant [{message.stop_reason}]"
    )
    texts = [part for part in message.content if isinstance(part, Text)]
    pad = " " * len(number)
    if not texts:
        yield f"{number}{label}:"
    for part in message.content:
        if isinstance(part, Text):
            yield from _block(f"{number if part is texts[0] else pad}{label}: ", part.text)
        elif isinstance(part, Thinking):
            yield from _block(f"{pad}  (thinking) ", "[redacted]" if part.redacted else part.text)
        elif isinstance(part, ToolCall):
            arguments = part.raw_arguments if part.raw_arguments is not None else json.dumps(part.arguments)
            yield f"{pad}  -> {part.name} {arguments} ({part.id})"
    if message.error:
        yield f"{pad}  error: {message.error}"


def _block(prefix: str, text: str) -> Iterator[str]:
    """``prefix`` and the text, its later lines indented under the first."""
    lines = text.splitlines() or [""]
    yield prefix + lines[0]
    for line in lines[1:]:
        yield " " * len(prefix) + line


def _cut(text: str, full: bool) -> str:
    lines = text.splitlines()
    if full or len(lines) <= RESULT_LINES:
        return text
    return "\n".join(
        [*lines[:RESULT_LINES], f"... {len(lines) - RESULT_LINES} more lines (--full shows them)"]
    )
