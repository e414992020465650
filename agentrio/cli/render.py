"""A readable, live rendering of an agent's events for a terminal."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import attrs

from ..events import (
    AgentEnd,
    AgentStart,
    ApprovalRequest,
    ChildEvent,
    Event,
    Inbox,
    MessageDiscard,
    MessageEnd,
    RequestRetry,
    StepEnd,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from ..messages import AssistantMessage, UserMessage
from ..tools.todo import TODO
from .transcript import cost_text

TIMELINE_WIDTH = 32


@attrs.define
class Style:
    """ANSI styles, or none when the output is not a terminal."""

    enabled: bool

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def magenta(self, text: str) -> str:
        return self._wrap("35", text)

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        return cls(stream.isatty() and "NO_COLOR" not in os.environ)


def one_line(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_call(name: str, arguments: Mapping[str, Any]) -> str:
    """A call in a few words: its command, its pattern (and where, unless
    everywhere), or its path; a ``todo`` call by its name (the checklist
    shows its list)."""
    if name == TODO:
        return "todo (the plan)"
    command, pattern, path = (arguments.get(key) for key in ("command", "pattern", "path"))
    if isinstance(command, str):
        return f"{name} {command}"
    if isinstance(pattern, str):
        where = f" in {path}" if isinstance(path, str) and path not in ("", ".") else ""
        return f"{name} {pattern}{where}"
    if isinstance(path, str):
        return f"{name} {path}"
    return f"{name} {json.dumps(arguments, ensure_ascii=False)}" if arguments else name


@attrs.define
class _Span:
    label: str
    mode: str
    start: float
    duration: float | None = None
    is_error: bool = False


class EventPrinter:
    """Writes one line per meaningful event, indented by turn, with the time
    since the first event; after each batch of tool calls, a timeline that
    shows which calls overlapped. With ``show_agents``, each line names its
    agent and child agents' events (``child_event``) are indented under
    their parent, so a team reads as a tree."""

    def __init__(
        self, out: TextIO = sys.stdout, *, show_agents: bool = False, names: dict[str, str] | None = None
    ) -> None:
        self.out = out
        self.style = Style.for_stream(out)
        self.show_agents = show_agents
        self._t0: float | None = None
        self._spans: dict[str, dict[str, _Span]] = {}
        #: Agent names by id: given, or learnt from forwarded child events.
        self.names: dict[str, str] = dict(names or {})
        self._depth = 0
        self.requests = 0
        self.tool_calls = 0

    def _line(self, event: Event, text: str, *, bar: bool = True) -> None:
        if self._t0 is None:
            self._t0 = event.time
        stamp = self.style.dim(f"{event.time - self._t0:6.2f}s")
        who = ""
        if self.show_agents:
            name = self.names.get(event.agent_id, event.agent_id)
            who = self.style.cyan(f"{'  ' * self._depth}{name:<{14 - 2 * self._depth}} ")
        gutter = self.style.dim("│ ") if bar else ""
        print(f"{stamp}  {who}{gutter}{text}", file=self.out, flush=True)

    def __call__(self, event: Event) -> None:
        if isinstance(event, ChildEvent):
            self.names.update(zip(event.path, event.names))
            self._depth = len(event.path)
            try:
                self._render(event.event)
            finally:
                self._depth = 0
        else:
            self._render(event)

    def _render(self, event: Event) -> None:
        s = self.style
        match event:
            case AgentStart():
                self._line(event, s.bold("▶ run started"), bar=False)
            case TurnStart():
                self._line(event, s.bold(f"┌ turn {event.turn}"), bar=False)
            case TurnEnd():
                self._line(event, s.bold(f"└ turn {event.turn}: {event.stop_reason}"), bar=False)
            case MessageEnd():
                self._message(event)
            case MessageDiscard():
                self._line(event, s.yellow(f"↶ streamed reply withdrawn ({event.reason})"))
            case RequestRetry():
                self._line(event, s.yellow(f"↻ {event.error}; retry {event.attempt} in {event.delay:.1f}s"))
            case Inbox(reason="send"):
                kind = "steering (next step)" if event.target == "next_step" else "follow-up (next turn)"
                for item in event.inserted:
                    self._line(event, s.magenta(f"✉ queued {kind}: {one_line(item.message.text, 70)}"))
            case ToolExecutionStart():
                self._tool_start(event)
            case ToolExecutionUpdate():
                progress = event.progress
                if isinstance(progress, dict) and "text" in progress:
                    for line in str(progress["text"]).splitlines():
                        self._line(event, s.dim(f"  ┆ {one_line(line)}"))
            case ToolExecutionEnd():
                self._tool_end(event)
            case ApprovalRequest():
                self._line(event, s.yellow(f"? approval needed for {event.summary}"))
            case StepEnd():
                self._timeline(event)
            case AgentEnd():
                self._summary(event)
            case _:
                # A line per meaningful event: the others (deltas, states,
                # the inbox's claims, the runtime's own events) draw nothing.
                pass

    def _message(self, event: MessageEnd) -> None:
        s, message = self.style, event.message
        if isinstance(message, UserMessage):
            self._line(event, f"{s.cyan('you')} › {one_line(message.text)}")
        elif isinstance(message, AssistantMessage):
            self.requests += self._depth == 0
            if message.text:
                self._line(event, f"{s.green('assistant')} › {one_line(message.text)}")
            if message.stop_reason not in ("stop", "tool_use"):
                self._line(event, s.red(f"assistant stopped: {message.stop_reason} {message.error or ''}"))

    def _tool_start(self, event: ToolExecutionStart) -> None:
        label = one_line(describe_call(event.tool_name, event.arguments), 48)
        if event.mode is not None:
            self._spans.setdefault(event.agent_id, {})[event.tool_call_id] = _Span(
                label, event.mode, event.time
            )
        mode = event.mode or "not run"
        self._line(event, f"⚙ {label} {self.style.dim(f'[{mode}]')}")

    def _tool_end(self, event: ToolExecutionEnd) -> None:
        s = self.style
        self.tool_calls += self._depth == 0
        span = self._spans.get(event.agent_id, {}).get(event.tool_call_id)
        if span is not None:
            span.duration, span.is_error = event.duration, event.is_error
        result = event.result.text
        mark = s.red("✗") if event.is_error else s.green("✓")
        millis = s.dim(f"{event.duration * 1000:.0f} ms")
        first = one_line(result.splitlines()[0] if result.strip() else "(no output)", 60)
        self._line(event, f"{mark} {event.tool_name} {millis}  {s.dim(first)}")

    def _timeline(self, event: StepEnd) -> None:
        spans = [
            (sp, sp.duration)
            for sp in self._spans.pop(event.agent_id, {}).values()
            if sp.duration is not None
        ]
        if len(spans) < 2:
            return
        start = min(sp.start for sp, _ in spans)
        total = max(sp.start + duration for sp, duration in spans) - start or 1e-9
        s = self.style
        self._line(event, s.dim(f"  timeline of {len(spans)} calls, {total * 1000:.0f} ms"))
        width = max(len(sp.label) for sp, _ in spans)
        for sp, duration in spans:
            begin = round((sp.start - start) / total * TIMELINE_WIDTH)
            length = max(1, round(duration / total * TIMELINE_WIDTH))
            bar = " " * begin + "█" * min(length, TIMELINE_WIDTH - begin)
            colour = s.red if sp.is_error else (s.yellow if sp.mode == "exclusive" else s.cyan)
            self._line(
                event, s.dim(f"  {sp.label:<{width}} ") + colour(f"{bar:<{TIMELINE_WIDTH}}") + s.dim("▏")
            )

    def _summary(self, event: AgentEnd) -> None:
        s, usage = self.style, event.usage
        if self._depth:
            colour = s.green if event.stop_reason == "completed" else s.red
            self._line(event, colour(f"■ {event.stop_reason}") + s.dim(f" · {event.turns} turns"), bar=False)
            return
        colour = s.green if event.stop_reason == "completed" else s.red
        self._line(
            event,
            colour(f"■ run {event.stop_reason}")
            + s.dim(
                f" · {event.turns} turns · {self.requests} model requests · {self.tool_calls} tool calls"
                f" · {usage.input_tokens:,} tokens in, {usage.output_tokens:,} out{cost_text(usage)}"
            ),
            bar=False,
        )
        if event.error:
            self._line(event, s.red(event.error), bar=False)
