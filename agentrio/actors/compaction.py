"""Compaction: the older part of a long history replaced by a summary.

A compaction asks the agent's model for a summary of history up to a cut,
then journals a ``Compacted`` record: committed history becomes the summary
followed by the kept recent tail, while the records of what it replaced stay
in the journal. The cut never separates a tool call from its result, and it
never reaches into the open step (its input stays as it is).

It happens when the next request would pass ``Limits.compact_at`` of the
context window, when the provider answers context overflow (the request is
then retried once), or when ``Agent.compact`` asks for it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
import trio

from ..events import CompactionEnd, CompactionStart
from ..journal.records import Compacted
from ..messages import (
    AssistantMessage,
    Document,
    Image,
    Message,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    project_tool_protocol,
)
from ..models import CONNECTION_ERROR, MessageAssembler, ModelRequest, ProviderError
from .model_stream import stream_model
from .routing import choose_model

if TYPE_CHECKING:
    from .ports import ActivityPorts

#: Characters a token stands for in the estimates (a common rule of thumb
#: for English text and code; the provider's count replaces it as soon as a
#: request reports one).
CHARS_PER_TOKEN = 4

DEFAULT_COMPACTION_PROMPT = """\
The conversation so far is about to be replaced by a summary, written by you \
now, from which the work will continue. Do not call any tool. Write the \
summary in plain text, with these sections:

1. Goals: what the user asked for, in their own terms, and any constraint \
they set.
2. Decisions: what was decided or learned, and why.
3. Files and resources: every file, path, command or resource touched, and \
what was done to it.
4. Open work: what remains to be done, what was in progress, and the next \
step.

Be specific (names, paths, values); leave out what no longer matters."""

#: Introduces the summary where it stands in history.
SUMMARY_HEADER = "[The earlier part of this conversation was compacted. Its summary follows.]\n\n"


#: What an image is counted as: Anthropic's cost of a picture of about a
#: megapixel, the largest it takes unscaled (OpenAI's is of the same order).
IMAGE_TOKENS = 1600


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A rough token count of ``messages`` (text, thinking, tool calls and
    results by characters; an image as ``IMAGE_TOKENS``)."""
    return sum(_chars(m) for m in messages) // CHARS_PER_TOKEN


def _chars(message: Message) -> int:
    content = message.content
    if isinstance(content, str):
        return len(content)
    total = 0
    for part in content:
        if isinstance(part, Text | Thinking):
            total += len(part.text)
        elif isinstance(part, ToolCall):
            raw = part.raw_arguments if part.raw_arguments is not None else json.dumps(part.arguments)
            total += len(part.name) + len(raw)
        elif isinstance(part, Image):
            total += IMAGE_TOKENS * CHARS_PER_TOKEN
        elif isinstance(part, Document):
            total += len(part.data)  # text: its characters; a PDF: about as many as its bytes
    return total


def choose_cut(messages: Sequence[Message], keep_recent_tokens: int, *, floor: int = 0) -> int | None:
    """Where to cut committed ``messages``: the index of the first message
    kept, such that the kept tail holds at most about ``keep_recent_tokens``
    (as much as fits), no tool call is kept apart from its result, and
    something after ``floor`` (a previous summary) is summarized. None when
    no cut does that."""
    results = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    waiting: set[str] = set()  # calls before the cut whose result is not yet
    points = []
    for index, message in enumerate(messages):
        if index > floor and not waiting:
            points.append(index)
        if isinstance(message, AssistantMessage):
            waiting |= {c.id for c in message.tool_calls if c.id in results}
        elif isinstance(message, ToolResultMessage):
            waiting.discard(message.tool_call_id)
    if len(messages) > floor and not waiting:
        points.append(len(messages))
    if not points:
        return None
    # Where the longest tail within keep_recent_tokens starts.
    fits, tail = len(messages), 0
    for index in range(len(messages) - 1, -1, -1):
        tail += estimate_tokens([messages[index]])
        if tail > keep_recent_tokens:
            break
        fits = index
    return next((p for p in points if p >= fits), points[-1])


@attrs.frozen
class CompactionOutcome:
    """What a compaction did: ``compacted`` is False when there was nothing
    to compact or ``error`` (the summary request failed)."""

    compacted: bool
    tokens_before: int
    tokens_after: int
    usage: Usage = attrs.field(factory=Usage)
    error: str | None = None


class CompactionFailed(Exception):
    """The summary request of ``Agent.compact`` failed; history is unchanged."""


class Compactor:
    """Compacts one agent's history through ``ports`` (its journal, its
    spec, its event stream), and keeps the meter that says when the next
    request is due for it.

    Used by the agent's own tasks only (its activity, or a maintenance).
    A compaction either journals its record and changes history, or leaves
    both as they were (a failed summary, a cancel).
    """

    def __init__(self, ports: ActivityPorts) -> None:
        self._ports = ports
        self._limits = ports.spec.limits
        #: The context size the last request reported, and the history
        #: length it covered (None: nothing reported since the last change).
        self._reported: tuple[int, int] | None = None
        # A run goes on from the last report, unless a compaction since then
        # made it stale (kept messages still carry the usage they had).
        state = ports.journal.state
        if state.summary is None:
            for index in range(len(state.messages) - 1, -1, -1):
                message = state.messages[index]
                if isinstance(message, AssistantMessage):
                    self.observe(message, index + 1)
                    break

    def observe(self, message: AssistantMessage, length: int) -> None:
        """``message`` was committed, ending a history of ``length``."""
        usage = message.usage
        context = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if context:
            self._reported = (context + usage.output_tokens, length)

    def tokens(self, history: Sequence[Message]) -> int:
        """The next request's size: the last reported one plus an estimate
        of what was added since; without a report, an estimate of all."""
        if self._reported is not None and self._reported[1] <= len(history):
            reported, length = self._reported
            return reported + estimate_tokens(history[length:])
        spec = self._ports.spec
        fixed = len(spec.system_prompt) + sum(
            len(t.name) + len(t.description) + len(json.dumps(t.parameters))
            for t in (tool.spec for tool in self._ports.tools.values())
        )
        return fixed // CHARS_PER_TOKEN + estimate_tokens(history)

    def due(self, history: Sequence[Message]) -> bool:
        window = self._limits.context_window or getattr(self._ports.spec.model, "context_window", None)
        if not window:
            return False
        return self.tokens(history) >= self._limits.compact_at * window

    async def compact(
        self, history: Sequence[Message], committed: int, reason: str, instructions: str | None = None
    ) -> CompactionOutcome:
        """Compact ``history``, whose first ``committed`` messages are the
        agent's committed history (the cut stays among them)."""
        state = self._ports.journal.state
        before = self.tokens(history)
        floor = 0 if state.summary is None else 1  # the previous summary alone is not worth summarizing
        cut = choose_cut(history[:committed], self._limits.keep_recent_tokens, floor=floor)
        if cut is None:
            return CompactionOutcome(False, before, before)
        emit = self._ports.emit
        emit(CompactionStart, reason=reason, tokens_before=before)
        try:
            text, usage = await self._summarize(history[:cut], instructions)
        except ProviderError as exc:
            error = f"the summary request failed: {exc}"
            emit(CompactionEnd, reason=reason, tokens_before=before, tokens_after=before, error=error)
            return CompactionOutcome(False, before, before, error=error)
        except BaseException:
            # Every start has its end, a cancel included.
            emit(CompactionEnd, reason=reason, tokens_before=before, tokens_after=before, error="interrupted")
            raise
        return await self._apply(text, usage, history, cut, reason, before)

    async def _apply(
        self, text: str, usage: Usage, history: Sequence[Message], cut: int, reason: str, before: int
    ) -> CompactionOutcome:
        """Journal the summary of ``history[:cut]`` and announce its end."""
        summary = UserMessage(SUMMARY_HEADER + text)
        kept = [summary, *history[cut:]]
        self._reported = None  # it counted the history replaced now
        after = self.tokens(kept)
        await self._ports.journal.append(Compacted(summary, cut, reason, before, after, usage))
        await self._ports.journal.sync()
        self._ports.emit(
            CompactionEnd,
            reason=reason,
            tokens_before=before,
            tokens_after=after,
            messages_summarized=cut,
            usage=usage,
        )
        return CompactionOutcome(True, before, after, usage)

    def start_background(self, history: Sequence[Message], committed: int) -> BackgroundSummary | None:
        """Start summarizing ``history`` (its first ``committed`` messages
        committed) in a task of the agent's own, while the run goes on; None
        when there is nothing to compact. ``finish`` applies it."""
        state = self._ports.journal.state
        floor = 0 if state.summary is None else 1
        cut = choose_cut(history[:committed], self._limits.keep_recent_tokens, floor=floor)
        if cut is None:
            return None
        before = self.tokens(history)
        self._ports.emit(CompactionStart, reason="background", tokens_before=before)
        job = BackgroundSummary(self, list(history[:cut]), before)
        self._ports.start_actor(job.run)
        return job

    async def finish(self, job: BackgroundSummary, history: Sequence[Message]) -> CompactionOutcome:
        """At a step boundary: apply the summary ``job`` made (history has only
        grown since it started), or report why there is none."""
        if job.error is not None:
            self._ports.emit(
                CompactionEnd,
                reason="background",
                tokens_before=job.before,
                tokens_after=job.before,
                error=job.error,
            )
            return CompactionOutcome(False, job.before, job.before, error=job.error)
        assert job.result is not None  # (done without an error)
        text, usage = job.result
        return await self._apply(text, usage, history, len(job.messages), "background", job.before)

    async def drop(self, job: BackgroundSummary) -> None:
        """Stop ``job`` unapplied (its start gets its end)."""
        await job.join()
        self._ports.emit(
            CompactionEnd,
            reason="background",
            tokens_before=job.before,
            tokens_after=job.before,
            error="dropped",
        )

    async def _summarize(self, messages: Sequence[Message], instructions: str | None) -> tuple[str, Usage]:
        """The summary of ``messages`` and what it cost; raises
        ``ProviderError`` when there is none."""
        spec = self._ports.spec
        prompt = spec.compaction_prompt or DEFAULT_COMPACTION_PROMPT
        if instructions:
            prompt += f"\n\nAlso: {instructions}"
        # The tools go along: providers refuse tool calls in history without them.
        request = ModelRequest(
            spec.system_prompt,
            project_tool_protocol([*messages, UserMessage(prompt)]),
            [tool.spec for tool in self._ports.tools.values()],
            prompt_cache=spec.prompt_cache,
            cache_key=self._ports.session_id,
        )
        assembler = MessageAssembler()
        model = await choose_model(self._ports, request, "summary")
        error = await stream_model(model, request, assembler.feed, start=self._ports.start_actor)
        if error is not None:
            raise error
        if assembler.done is None:
            raise ProviderError(type=CONNECTION_ERROR, message="the stream ended without a stop reason")
        message = assembler.message()
        if message.truncated:
            raise ProviderError(
                type="cut_summary", message=f"the summary was cut off ({message.stop_reason})"
            )
        if not message.text.strip():
            raise ProviderError(
                type="empty_summary", message=f"the model gave no summary (stop reason {message.stop_reason})"
            )
        return message.text.strip(), self._ports.prices.priced(message.usage, message.provider, message.model)


class BackgroundSummary:
    """A summary request running beside the run (``AgentSpec(compaction=
    "background")``): its task is the agent's, and the activity that started
    it ``join``s it before it ends."""

    def __init__(self, compactor: Compactor, messages: list[Message], before: int) -> None:
        self._compactor = compactor
        self.messages = messages
        self.before = before
        self.result: tuple[str, Usage] | None = None
        self.error: str | None = None
        self._scope = trio.CancelScope()
        self.done = trio.Event()

    async def run(self) -> None:
        try:
            with self._scope:
                try:
                    self.result = await self._compactor._summarize(self.messages, None)
                except ProviderError as exc:
                    self.error = f"the summary request failed: {exc}"
        finally:
            if self.result is None and self.error is None:
                self.error = "interrupted"
            self.done.set()

    async def join(self) -> None:
        """Cancel the task unless it has ended, and wait until it has."""
        self._scope.cancel()
        with trio.CancelScope(shield=True):
            await self.done.wait()


async def compact_now(ports: ActivityPorts, instructions: str | None = None) -> CompactionOutcome:
    """``Agent.compact``: run in the agent while no activity runs."""
    history = ports.journal.state.messages
    outcome = await Compactor(ports).compact(history, len(history), "manual", instructions)
    if outcome.error:
        raise CompactionFailed(outcome.error)
    return outcome
