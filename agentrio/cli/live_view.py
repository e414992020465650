"""A live transcript of an agent's events for a person at a terminal.

What is final (the assistant's text line by line, finished tool calls with
their timing and a short result, the end of a run) is printed once, above a
live region that is redrawn in place: the line being streamed, the tool calls
still running, and a status line with the elapsed time and the tokens so far.
A command adds its own lines under them (``footer``: chat's queue and input).
When the output is a terminal, the assistant's text is rendered as Markdown
a block at a time (a block is final at a blank line outside a code fence),
long lines wrap at word boundaries, and the status line counts the tokens of
the reply being streamed (estimated, ``~``, until the provider says). When it
is not, there is no live region and the text is printed as it came. A
notice the runtime adds to the history (the max-turns note) is shown as a
notice, not as the person's words, and a long prompt as one line. Everything
is drawn by rich; text from the model or a tool is never read as rich markup
and its control characters are shown, not obeyed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import attrs
import trio
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from ..actors.activity import MAX_TURNS_NOTE, PROTOCOL_REPAIR
from ..events import (
    AgentEnd,
    AgentStart,
    ApprovalRequest,
    Event,
    MessageDiscard,
    MessageEnd,
    MessageUpdate,
    RequestRetry,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
)
from ..messages import AssistantMessage, Message, Usage, UserMessage
from ..models import StreamEvent, TextDelta, ThinkingDelta, ToolCallDelta
from ..tools.todo import TodoItem, current_todos
from .checklist import checklist, plan_of
from .render import describe_call, one_line
from .transcript import cost_text

#: Lines of a tool result shown unless the whole output is asked for;
#: changed lines of a diff a tool answered with.
RESULT_LINES = 3
DIFF_RESULT_LINES = 12
#: Messages of a restored history shown when a chat opens it.
RECAP = 6
#: Seconds between redraws of the live region.
REFRESH = 0.1
#: Lines of a block still streaming drawn in the live region (its end).
PARTIAL_LINES = 12
#: A prompt longer than this (characters or lines) is echoed as one line.
ECHO_CHARS, ECHO_LINES = 300, 3
#: Characters a token stands for, to count a reply while it streams.
CHARS_PER_TOKEN = 4
#: How the messages the runtime adds to the history begin.
NOTICES = (MAX_TURNS_NOTE.partition("{")[0], PROTOCOL_REPAIR)


def terminal_console(*, stderr: bool = False) -> Console:
    """A console for a transcript: on a terminal long lines wrap at word
    boundaries; into a file or a pipe they are written whole."""
    console = Console(highlight=False, stderr=stderr)
    console.soft_wrap = not console.is_terminal
    return console


def markdown_blocks(text: str) -> tuple[str, str]:
    """``text`` cut at its last blank line outside a code fence: the blocks
    that are complete, and the rest (still streaming)."""
    cut = 0
    fenced = False
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not stripped and not fenced and line.endswith("\n") and offset:
            cut = offset + len(line)
        offset += len(line)
    return text[:cut], text[cut:]


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


#: Control characters a model or a tool may send, shown as symbols: an
#: escape sequence in a reply must not move the cursor or clear the screen.
_CONTROLS = {code: 0x2400 + code for code in range(0x20) if chr(code) not in "\t\n"}
_CONTROLS.update({0x7F: 0x2421, **{code: 0xFFFD for code in range(0x80, 0xA0)}})


def safe(text: str) -> str:
    """``text`` with its control characters (but tabs and newlines) made visible."""
    return text.translate(_CONTROLS)


@attrs.define
class _Running:
    label: str
    start: float
    #: False for a call that never runs (refused, invalid): not drawn as running.
    runs: bool = True
    progress: str = ""


def is_notice(text: str) -> bool:
    """Whether a user message is one the runtime wrote (``NOTICES``), not a person."""
    return text.startswith(NOTICES)


def echo(prompt: str) -> str:
    """A prompt as the transcript repeats it: whole when short, else its
    first line and its size (a diff piped to ``run -`` is not printed again)."""
    lines = prompt.splitlines()
    if len(prompt) <= ECHO_CHARS and len(lines) <= ECHO_LINES:
        return prompt
    first = one_line(next((line for line in lines if line.strip()), ""), 80)
    return f"{first}  (+{len(lines) - 1:,} more lines, {len(prompt):,} characters)"


def exit_status(stop_reason: str) -> int:
    """The exit code of a run that ended with ``stop_reason`` (see ``EXIT_CODES``)."""
    for code, reasons in EXIT_CODES.items():
        if stop_reason in reasons:
            return code
    return 1


#: Exit codes of ``agentrio run``; anything else is 1 (an error).
EXIT_CODES: dict[int, tuple[str, ...]] = {
    0: ("completed",),
    3: ("max_turns", "max_tool_calls", "timeout", "max_tokens", "context_overflow", "budget"),
    4: ("permission_denied",),
    5: ("output_invalid",),
    130: ("aborted",),
}


#: Lines of an approval request's summary (a diff, a script) shown.
SUMMARY_LINES = 20


def approval_question(event: ApprovalRequest, *, full: bool = False) -> list[Text]:
    """What a person is asked about a tool call: the tool, what it would do
    (its summary: a diff coloured, its changed lines kept first when it is
    cut to ``SUMMARY_LINES`` unless ``full``), and why the policy asks."""
    first, *rest = event.summary.splitlines() or [""]
    question = Text(f"? allow {safe(event.tool_name)}: ", style="yellow bold")
    question.append(safe(first))
    if event.reason:
        question.append(f"  ({safe(event.reason)})", style="dim")
    shown = rest if full else _changed_first(rest, SUMMARY_LINES)
    diff = _is_diff(rest)
    lines = [question] + [
        Text("  " + safe(line), style=_diff_style(line) if diff else "dim") for line in shown
    ]
    if len(rest) > len(shown):
        lines.append(Text(f"  … {len(rest) - len(shown)} more lines (d shows them all)", style="dim"))
    return lines


def _is_diff(lines: Sequence[str]) -> bool:
    return any(line.startswith("@@") for line in lines)


def _changed_first(lines: list[str], limit: int) -> list[str]:
    """At most ``limit`` of a summary's lines, in order; for a diff, the
    unchanged context lines are the ones left out."""
    if len(lines) <= limit or not _is_diff(lines):
        return lines[:limit]
    context = [i for i, line in enumerate(lines) if line.startswith(" ")]
    dropped = set(context[: len(lines) - limit]) if len(lines) - len(context) <= limit else set(context)
    return [line for i, line in enumerate(lines) if i not in dropped][:limit]


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return "dim"


class LiveView:
    """Renders events on ``console``. Only the task that owns the view calls
    it; ``ticking`` redraws the elapsed times while a run is in progress."""

    def __init__(
        self,
        console: Console,
        *,
        full: bool = False,
        footer: Callable[[], list[Text]] | None = None,
    ) -> None:
        self.console = console
        self.full = full
        self.footer = footer
        self._live: Live | None = None
        #: Markdown for the assistant's text: only on a terminal.
        self.markdown = console.is_terminal
        self._partial = ""
        #: Characters of the reply being streamed, for its estimated tokens.
        self._streamed = 0
        self._thinking = False
        self._running: dict[str, _Running] = {}
        self._run_start: float | None = None
        #: Tokens used by the run in progress (or the last one).
        self.usage = Usage()
        #: The error the last reply stopped with, not to be repeated by the run's end.
        self._shown_error: str | None = None

    # -- the live region -------------------------------------------------------

    @contextmanager
    def live(self) -> Iterator[None]:
        live = Live(
            console=self.console,
            auto_refresh=False,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
            vertical_overflow="visible",
            get_renderable=self._region,
        )
        with live:
            self._live = live
            try:
                yield
            finally:
                self._live = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No live region inside the block (while a person answers a question)."""
        live = self._live
        if live is None:
            yield
            return
        live.stop()
        self._live = None
        try:
            yield
        finally:
            live.start()
            self._live = live

    async def ticking(self) -> None:
        """Redraw the elapsed times while a run is in progress (run it in a
        nursery for as long as the view lives); other changes redraw at once."""
        while True:
            if self._run_start is not None:
                self.refresh()
            await trio.sleep(REFRESH)

    def refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def _region(self) -> Group:
        now = trio.current_time()
        lines: list[Text] = []
        if self._partial:
            shown = self._partial.splitlines()[-PARTIAL_LINES:]
            lines.append(Text(safe("\n".join(shown))))
        for running in self._running.values():
            if not running.runs:
                continue
            frame = SPINNER[int((now - running.start) * 10) % len(SPINNER)]
            line = Text(f"{frame} {running.label} ", style="yellow")
            line.append(f"{now - running.start:.1f}s", style="dim")
            if running.progress:
                line.append(f"  {one_line(running.progress, 60)}", style="dim")
            lines.append(line)
        if self._run_start is not None:
            frame = SPINNER[int((now - self._run_start) * 10) % len(SPINNER)]
            what = "thinking" if self._thinking else "working"
            lines.append(Text(f"{frame} {what} {now - self._run_start:.1f}s · {self._tokens()}", style="dim"))
        if self.footer is not None:
            lines.extend(self.footer())
        return Group(*lines)

    def _tokens(self) -> str:
        out = f"{self.usage.output_tokens:,}"
        if self._streamed:
            out = f"~{self.usage.output_tokens + self._streamed // CHARS_PER_TOKEN:,}"
        return f"{self.usage.input_tokens:,} tokens in, {out} out{cost_text(self.usage)}"

    # -- final lines -------------------------------------------------------------

    def print(self, text: RenderableType | str, style: str = "") -> None:
        """Print a final line; a ``str`` may come from anyone and is shown as plain text."""
        self.console.print(Text(safe(text), style=style) if isinstance(text, str) else text)

    def _print_answer(self, text: str) -> None:
        """The assistant's text: Markdown on a terminal, as it came otherwise."""
        if self.markdown:
            from rich.markdown import Markdown  # imported on first use: start-up time

            self.print(Markdown(safe(text).strip("\n")))
        else:
            self.print(text.rstrip("\n") if text.endswith("\n") else text)

    def recap(self, messages: Sequence[Message], last: int = RECAP) -> None:
        """The end of a restored history, one dim line a message."""
        if len(messages) > last:
            self.print(f"… {len(messages) - last} earlier messages", "dim")
        for message in messages[-last:]:
            if isinstance(message, UserMessage) and is_notice(message.text):
                self.print(f"ⓘ {one_line(message.text, 100)}", "dim yellow")
            elif isinstance(message, UserMessage):
                self.print(f"› {one_line(message.text, 100)}", "dim cyan")
            elif isinstance(message, AssistantMessage):
                calls = ", ".join(describe_call(call.name, call.arguments) for call in message.tool_calls)
                text = " · ".join(part for part in (message.text, calls) if part)
                self.print(one_line(text, 100), "dim")
        if plan := current_todos(messages):
            self.show_plan(plan)

    def show_plan(self, plan: Sequence[TodoItem]) -> None:
        """The model's plan as a checklist (see ``checklist``)."""
        for text, style in checklist(plan):
            self.print(text, style)

    def _flush_partial(self) -> None:
        if self._partial:
            self._print_answer(self._partial)
            self._partial = ""

    # -- events ----------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        match event:
            case AgentStart():
                self._run_start = event.time
                self.usage = Usage()
                self._streamed = 0
            case MessageUpdate():
                self._delta(event.delta)
            case MessageEnd():
                self._message(event.message)
            case MessageDiscard():
                self._partial = ""
                self._streamed = 0
                self.print(f"(reply withdrawn: {event.reason})", "yellow")
            case RequestRetry():
                self.print(f"↻ {event.error}; retry {event.attempt} in {event.delay:.1f}s", "yellow")
            case ToolExecutionStart():
                self._flush_partial()
                label = safe(one_line(describe_call(event.tool_name, event.arguments), 70))
                self._running[event.tool_call_id] = _Running(label, event.time, event.mode is not None)
            case ToolExecutionUpdate():
                running = self._running.get(event.tool_call_id)
                progress = event.progress
                if running is not None and isinstance(progress, dict) and "text" in progress:
                    lines = str(progress["text"]).splitlines()
                    running.progress = safe(lines[-1]) if lines else ""
            case ToolExecutionEnd():
                self._tool_end(event)
            case AgentEnd():
                self._flush_partial()
                self._running.clear()
                self._run_start = None
                self._thinking = False
                # The error first (unless a reply already said it), then the
                # line that closes the run.
                if event.error and event.error != self._shown_error:
                    self.print(one_line(event.error, 300), "red")
                self._shown_error = None
                style = "green" if event.stop_reason == "completed" else "red"
                line = Text(f"■ {event.stop_reason}", style=style)
                turns = "1 turn" if event.turns == 1 else f"{event.turns} turns"
                line.append(f" · {turns} · {self._tokens()}", style="dim")
                self.print(line)
            case _:
                # The transcript shows the run, its replies and its tool calls;
                # the other events (turns, steps, the inbox, approvals: the
                # command asks those itself) change nothing drawn here.
                pass
        self.refresh()

    def _delta(self, delta: StreamEvent) -> None:
        if isinstance(delta, ThinkingDelta):
            self._thinking = True
            self._streamed += len(delta.text)
        elif isinstance(delta, ToolCallDelta):
            self._streamed += len(delta.arguments)
        elif isinstance(delta, TextDelta):
            self._thinking = False
            self._streamed += len(delta.text)
            text = self._partial + delta.text
            if self.markdown:
                done, self._partial = markdown_blocks(text)
                if done:
                    self._print_answer(done)
            else:
                *lines, self._partial = text.split("\n")
                for line in lines:
                    self.print(line)

    def _message(self, message: Message) -> None:
        if isinstance(message, UserMessage) and is_notice(message.text):
            self.print(Text(f"ⓘ {safe(message.text.strip('[]'))}", style="italic yellow"))
        elif isinstance(message, UserMessage):
            line = Text("› ", style="cyan")
            line.append(safe(echo(message.text).replace("\n", "\n  ")))
            self.print(line)
        elif isinstance(message, AssistantMessage):
            self._thinking = False
            self._flush_partial()
            self._streamed = 0
            self.usage = self.usage + message.usage
            if message.stop_reason not in ("stop", "tool_use"):
                self.print(
                    f"(the reply stopped: {message.stop_reason}) {message.error or ''}".rstrip(), "red"
                )
                self._shown_error = message.error

    def _tool_end(self, event: ToolExecutionEnd) -> None:
        running = self._running.pop(event.tool_call_id, None)
        label = running.label if running is not None else safe(event.tool_name)
        line = Text("✗ " if event.is_error else "✓ ", style="red" if event.is_error else "green")
        line.append(label)
        line.append(f"  {event.duration:.1f}s", style="dim")
        self.print(line)
        if (plan := plan_of(event)) is not None:
            self.show_plan(plan)
            return
        lines = event.result.text.splitlines()
        diff = _is_diff(lines)
        if self.full:
            shown = lines
        elif diff:
            # An edit's result: what it says, then its changed lines rather than the diff's headers.
            changed = [
                line
                for line in lines[1:]
                if line.startswith(("+", "-", "@@")) and line[:3] not in ("+++", "---")
            ]
            shown = [*lines[:1], *changed[:DIFF_RESULT_LINES]]
        else:
            shown = lines[:RESULT_LINES]
        for text in shown:
            self.print(Text("  │ " + safe(text), style=_diff_style(text) if diff else "dim"))
        if len(lines) > len(shown):
            more = len(lines) - len(shown)
            self.print(Text(f"  │ … {more} more line{'s' * (more > 1)} (--full shows them)", style="dim"))
