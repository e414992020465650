"""agentrio's events and messages as ACP ``session/update`` payloads.

Mapping: what to say, not whom to tell (the one thing read is a file a
``write`` or ``edit`` is about to change, for its full diff). Tool calls become ``tool_call``
(``pending``, with the arguments complete) when the assistant message that
asks for them is settled, then ``tool_call_update`` with ``in_progress`` and
``completed`` or ``failed``. A child agent's updates carry its path in
``_meta.agentrio`` and prefix its tool call ids with its agent id, so they
never collide with the parent's.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ... import events as ev
from ...mailbox import QueuedInput
from ...messages import (
    AssistantMessage,
    Image,
    Message,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ...models import events as stream
from ...tools.builtin.common import ToolInputError
from ...tools.builtin.editing import replace_text
from ...tools.builtin.text import read_text
from ...tools.builtin.workspace import Workspace
from .jsonrpc import INTERNAL_ERROR, RpcError
from .plans import plan_updates
from .terminals import terminal_content

#: ACP's tool kinds, by built-in tool name; anything else is ``other``.
TOOL_KINDS = {
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "ls": "search",
    "glob": "search",
    "grep": "search",
    "bash": "execute",
    "todo": "think",
}

#: agentrio's run stop reasons as ACP stop reasons; the others are errors.
STOP_REASONS = {
    "completed": "end_turn",
    "permission_denied": "end_turn",
    "max_tokens": "max_tokens",
    "max_turns": "max_turn_requests",
    "max_tool_calls": "max_turn_requests",
    "blocked": "refusal",
    "aborted": "cancelled",
}

#: How much of a running tool's progress output a client is shown.
MAX_PROGRESS_CHARS = 16_000
#: The largest file (bytes) whose whole text a ``write`` or ``edit`` diff shows.
MAX_DIFF_FILE = 256 * 1024


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def user_updates(message: UserMessage) -> Iterator[dict[str, Any]]:
    """A user message as ``user_message_chunk`` updates: its text, then each
    image as an ACP image block (a document is shown by its text only)."""
    if text := message.text:
        yield {"sessionUpdate": "user_message_chunk", "content": text_block(text)}
    if not isinstance(message.content, str):
        for part in message.content:
            if isinstance(part, Image):
                block = {
                    "type": "image",
                    "data": base64.b64encode(part.data).decode(),
                    "mimeType": part.media_type,
                }
                yield {"sessionUpdate": "user_message_chunk", "content": block}


def status_update(status: str, queued: Iterable[QueuedInput], usage: Usage, **more: Any) -> dict[str, Any]:
    """A session's status (``running``, ``idle``), the prompts waiting for a
    turn and its usage so far (``more``: other facts to tell), as the
    ``session_info_update`` agentrio's clients read in ``_meta.agentrio``."""
    info = {
        "status": status,
        "queued": [{"inputId": q.id, "text": q.message.text} for q in queued],
        "usage": {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens, "cost": usage.cost},
        **more,
    }
    return {"sessionUpdate": "session_info_update", "_meta": {"agentrio": info}}


def acp_stop_reason(stop_reason: str, error: str | None) -> str:
    """The ACP stop reason of a run that ended with ``stop_reason``; a stop
    that ACP counts as an error is raised as ``RpcError``."""
    if (stop := STOP_REASONS.get(stop_reason)) is None:
        raise RpcError(
            INTERNAL_ERROR,
            f"the run ended with {stop_reason}: {error or ''}".strip(),
            {"stopReason": stop_reason},
        )
    return stop


def _content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": text_block(text)}


def _progress_text(progress: Any) -> str:
    """A running tool's progress as text: a ``{"text": ...}`` report (a
    process's output) by its text, anything else as JSON."""
    if isinstance(progress, str):
        return progress
    if isinstance(progress, dict) and isinstance(text := progress.get("text"), str):
        return text
    return json.dumps(progress)


def _with_meta(update: dict[str, Any], meta: dict[str, Any] | None) -> dict[str, Any]:
    if meta is not None:
        ours = update.setdefault("_meta", {}).setdefault("agentrio", {})
        ours.update(meta["agentrio"])
    return update


class ToolCallView:
    """How one tool call is shown: title, kind, locations, diff, raw output."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self._workspace: Workspace | None = None
        try:
            self._workspace = Workspace.of(cwd)
        except ValueError:
            pass  # not a directory (any more): no file is read for a diff

    def _path(self, value: Any) -> str | None:
        if not isinstance(value, str) or not value:
            return None
        return str((self.cwd / value).resolve()) if not Path(value).is_absolute() else value

    def title(self, name: str, args: dict[str, Any]) -> str:
        for key in ("command", "path", "pattern", "task"):
            if isinstance(value := args.get(key), str) and value:
                first = value.splitlines()[0] if value.strip() else value
                return f"{name}: {first[:120]}"
        return name

    def full_diff(
        self, name: str, args: dict[str, Any], planned: dict[Path, str] | None = None
    ) -> list[dict[str, Any]]:
        """The diff of a ``write`` or ``edit`` about to run, with the whole
        old and new text of the file, read from the disk now (a file of at
        most ``MAX_DIFF_FILE`` bytes, inside the workspace); the diff of the
        arguments alone when the file cannot be read or the edit cannot be
        made. A file that does not exist has no old text. ``planned``: the
        texts earlier calls of the same message leave (updated here), which
        stand for the disk's."""
        path = args.get("path")
        if name not in ("write", "edit") or self._workspace is None or not isinstance(path, str):
            return self.diff(name, args)
        try:
            real = self._workspace.resolve(path)
            shown = self._workspace.show(real)
            if planned is not None and real in planned:
                before = planned[real]
            elif not real.exists():
                before = None
            elif real.stat().st_size > MAX_DIFF_FILE:
                return self.diff(name, args)
            else:
                before = read_text(real, shown)
            if name == "write" and isinstance(content := args.get("content"), str):
                after = content
            elif name == "edit" and before is not None:
                after, _ = replace_text(before, args, shown)
            else:
                return self.diff(name, args)
        except (ToolInputError, OSError, ValueError, KeyError):
            return self.diff(name, args)
        if planned is not None:
            planned[real] = after
        diff: dict[str, Any] = {"type": "diff", "path": str(real), "newText": after}
        if before is not None:
            diff["oldText"] = before
        return [diff]

    def start(
        self, call_id: str, name: str, args: dict[str, Any], diff: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The ``tool_call`` announcing a call; ``diff``: its diff, if made
        already (else that of its arguments)."""
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": self.title(name, args),
            "kind": TOOL_KINDS.get(name, "other"),
            "status": "pending",
            "rawInput": args,
        }
        if (path := self._path(args.get("path"))) is not None:
            update["locations"] = [{"path": path}]
        if diff := (diff if diff is not None else self.diff(name, args)):
            update["content"] = diff
        return update

    def diff(self, name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
        path = self._path(args.get("path"))
        if path is None:
            return []
        if (
            name == "edit"
            and isinstance(args.get("old_string"), str)
            and isinstance(args.get("new_string"), str)
        ):
            return [
                {"type": "diff", "path": path, "oldText": args["old_string"], "newText": args["new_string"]}
            ]
        if name == "write" and isinstance(args.get("content"), str):
            return [{"type": "diff", "path": path, "newText": args["content"]}]
        return []

    def end(
        self,
        call_id: str,
        call: ToolCall | None,
        result: ToolResultMessage,
        duration: float | None = None,
        diff: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The ``tool_call_update`` that ends a call: its diff (``diff`` if
        made when it was announced) unless it failed, its result's text, and
        as ``rawOutput`` the result's ``details`` if it has any, else its
        text and whether it is an error."""
        content = []
        if call and not result.is_error:
            content = list(diff) if diff is not None else self.diff(result.tool_name, call.arguments)
        text = result.text
        if text:
            content.append(_content(text))
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "failed" if result.is_error else "completed",
            "content": content,
            "rawOutput": (
                result.details if result.details is not None else {"text": text, "isError": result.is_error}
            ),
        }
        if duration:
            # From dispatch to completion: results are committed in model
            # order, so a fast call's update may wait for a slower one.
            update["_meta"] = {"agentrio": {"duration": round(duration, 4)}}
        return update


class UpdateMapper:
    """Turns one session's live events into ACP updates. It remembers the
    arguments of open tool calls and the progress they reported, so it must
    see the events of its session in order. It also keeps what is not yet
    in committed history, for a client that attaches now (``replay``)."""

    def __init__(self, cwd: Path) -> None:
        self.view = ToolCallView(cwd)
        self._calls: dict[str, ToolCall] = {}
        #: The diffs of open write and edit calls, made when they were announced.
        self._diffs: dict[str, list[dict[str, Any]]] = {}
        self._progress: dict[str, str] = {}
        #: Messages of the open step: history holds them only once it ends.
        self._step: list[Message] = []
        #: The top-level message streaming now, as (kind, pieces of text) runs.
        self._streaming: list[tuple[str, list[str]]] = []
        self._running: set[str] = set()
        #: The client terminals that running calls embed, by call id.
        self._terminals: dict[str, dict[str, Any]] = {}

    def replay(self, committed: tuple[Message, ...]) -> Iterator[dict[str, Any]]:
        """The updates that show a client the session as it is now: its
        committed history, the messages of the open step, the message
        streaming and the calls running. ``committed`` must be read when
        this mapper has seen every event emitted so far; the history's
        updates are made as they are taken, the rest now."""
        # The step may have ended in history before its step_end is emitted.
        tail = committed[len(committed) - len(self._step) :] if self._step else ()
        step = [m for m in self._step if not any(m is c for c in tail)]
        updates = [
            {"sessionUpdate": kind, "content": text_block("".join(pieces))}
            for kind, pieces in self._streaming
        ]
        for call_id in self._running:
            update: dict[str, Any] = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "in_progress",
            }
            if terminal := self._terminals.get(call_id):
                update["content"] = [terminal]
            elif progress := self._progress.get(call_id):
                update["content"] = [_content(progress)]
            updates.append(update)
        return itertools.chain(history_updates((*committed, *step), self.view), updates)

    def _track(self, event: ev.Event) -> None:
        """Keep what ``replay`` needs current with a top-level event."""
        if isinstance(event, ev.MessageEnd):
            self._step.append(event.message)
        elif isinstance(event, ev.StepEnd):
            self._step = []
        if isinstance(event, ev.MessageStart | ev.MessageEnd | ev.MessageDiscard):
            self._streaming = []
        elif isinstance(event, ev.MessageUpdate) and isinstance(
            event.delta, stream.TextDelta | stream.ThinkingDelta
        ):
            kind = (
                "agent_message_chunk" if isinstance(event.delta, stream.TextDelta) else "agent_thought_chunk"
            )
            if event.delta.text:
                if self._streaming and self._streaming[-1][0] == kind:
                    self._streaming[-1][1].append(event.delta.text)
                else:
                    self._streaming.append((kind, [event.delta.text]))
        elif isinstance(event, ev.ToolExecutionStart) and event.mode is not None:
            self._running.add(event.tool_call_id)
        elif isinstance(event, ev.ToolExecutionEnd):
            self._running.discard(event.tool_call_id)

    def updates(self, event: ev.Event) -> list[dict[str, Any]]:
        meta = None
        prefix = ""
        if isinstance(event, ev.ChildEvent):
            meta = {"agentrio": {"path": event.path, "names": event.names}}
            prefix = event.event.agent_id + "/"
            event = event.event
        else:
            self._track(event)
        return [_with_meta(update, meta) for update in self._updates(event, prefix)]

    def call_id(self, event: ev.Event, tool_call_id: str) -> str:
        return (
            tool_call_id if not isinstance(event, ev.ChildEvent) else f"{event.event.agent_id}/{tool_call_id}"
        )

    def _updates(self, event: ev.Event, prefix: str) -> list[dict[str, Any]]:
        if isinstance(event, ev.MessageUpdate):
            delta = event.delta
            if isinstance(delta, stream.TextDelta) and delta.text:
                return [{"sessionUpdate": "agent_message_chunk", "content": text_block(delta.text)}]
            if isinstance(delta, stream.ThinkingDelta) and delta.text:
                return [{"sessionUpdate": "agent_thought_chunk", "content": text_block(delta.text)}]
            return []
        if isinstance(event, ev.MessageEnd) and isinstance(event.message, AssistantMessage):
            updates = []
            planned: dict[Path, str] = {}
            for call in event.message.tool_calls:
                call_id = prefix + call.id
                self._calls[call_id] = call
                diff = self._diffs[call_id] = self.view.full_diff(call.name, call.arguments, planned)
                updates.append(self.view.start(call_id, call.name, call.arguments, diff))
            return updates
        if isinstance(event, ev.ToolExecutionStart) and event.mode is not None:
            return [
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": prefix + event.tool_call_id,
                    "status": "in_progress",
                }
            ]
        if isinstance(event, ev.ToolExecutionUpdate):
            call_id = prefix + event.tool_call_id
            if (terminal := terminal_content(event.progress)) is not None:
                self._terminals[call_id] = terminal
                return [{"sessionUpdate": "tool_call_update", "toolCallId": call_id, "content": [terminal]}]
            progress = _progress_text(event.progress)
            shown = (self._progress.get(call_id, "") + progress)[-MAX_PROGRESS_CHARS:]
            self._progress[call_id] = shown
            return [
                {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "content": [_content(shown)]}
            ]
        if isinstance(event, ev.ToolExecutionEnd):
            call_id = prefix + event.tool_call_id
            self._progress.pop(call_id, None)
            asked = self._calls.pop(call_id, None)
            plan = [] if prefix else plan_updates(asked, event.result)
            made = self._diffs.pop(call_id, None)
            end = self.view.end(call_id, asked, event.result, event.duration, made)
            if (terminal := self._terminals.pop(call_id, None)) is not None:
                end["content"].insert(0, terminal)  # the editor goes on showing it
            return [end, *plan]
        return []

    def permission_request(self, event: ev.ApprovalRequest, call_id: str) -> dict[str, Any]:
        """The ``toolCall`` of a ``session/request_permission``."""
        call = event.call
        update = self.view.start(call_id, call.name, call.arguments, self._diffs.get(call_id))
        del update["sessionUpdate"]
        content = update.setdefault("content", [])
        if event.summary:
            content.append(_content(event.summary))
        return update


def history_updates(
    messages: tuple[Message, ...] | list[Message],
    view: ToolCallView,
    calls: dict[str, ToolCall] | None = None,
) -> Iterator[dict[str, Any]]:
    """A session's committed history as the updates that would have shown
    it, made one by one; ``calls`` (by id) keeps the tool calls asked for so
    far, given to go on with more history later (``journal_view``)."""
    calls = {} if calls is None else calls
    for message in messages:
        if isinstance(message, UserMessage):
            yield from user_updates(message)
        elif isinstance(message, AssistantMessage):
            for part in message.content:
                if isinstance(part, Thinking) and part.text:
                    yield {"sessionUpdate": "agent_thought_chunk", "content": text_block(part.text)}
                elif isinstance(part, Text) and part.text:
                    yield {"sessionUpdate": "agent_message_chunk", "content": text_block(part.text)}
                elif isinstance(part, ToolCall):
                    calls[part.id] = part
                    yield view.start(part.id, part.name, part.arguments)
        elif isinstance(message, ToolResultMessage):
            call = calls.get(message.tool_call_id)
            yield view.end(message.tool_call_id, call, message)
            yield from plan_updates(call, message)
