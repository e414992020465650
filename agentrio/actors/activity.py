"""An activity: one run of the agent, from claiming input until both queues
are empty or a turn stops it.

A turn lasts from claiming input until the model stops asking for tools
(steering included); a step is one model request, with its retries, plus the
tool calls it produced. Each step walks the state machine

    build_context -> call_model -> validate_tools -> check_permission
      -> execute_tools -> append_results -> (recover) -> next step | done

and reports every transition as a ``state`` event.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import TYPE_CHECKING, Any

import attrs
import trio

from .. import _callbacks, tracing
from .._errors import sole_error
from .._ids import new_id
from ..events import (
    AgentEnd,
    AgentStart,
    MessageDiscard,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ModelFallback,
    Notice,
    OutputUpdate,
    RequestRetry,
    State,
    StepEnd,
    StepStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnEnd,
    TurnStart,
)
from ..initiator import Initiator, with_initiator
from ..journal.records import (
    MessageAppended,
    Record,
    RequestFailed,
    RolledBack,
    StateEntered,
    StepEnded,
    StepStarted,
    SystemPromptSet,
    TurnEnded,
    TurnStarted,
    prompt_digest,
)
from ..mailbox import QueuedInput, Target
from ..mailbox.inbox import as_queued
from ..messages import (
    ABORTED_BEFORE_DISPATCH,
    TOOL_ABORTED,
    TOOL_NOT_STARTED,
    AssistantMessage,
    Message,
    StopReason,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    error_result,
    project_tool_protocol,
)
from ..messages.protocol import GrowingProjection
from ..models import CONNECTION_ERROR, CONTEXT_OVERFLOW, MessageAssembler, Model, ModelRequest, ProviderError
from ..models.events import StreamEvent, StreamStart, TextDelta
from ..models.fallback import model_name
from ..models.output import OutputInvalid, PartialOutput
from . import goals
from .compaction import BackgroundSummary, CompactionOutcome, Compactor
from .continuation import CONTINUE_PROMPT, raised_budget, should_continue
from .hook_chain import bail, listeners
from .model_stream import stream_model
from .routing import choose_model, fallback_index, member
from .spec import PreStep, Reject, RequestContext, RequestError, RunResult, RunStopReason
from .tool_pool import BatchPorts, ToolBatch

if TYPE_CHECKING:
    from .ports import ActivityPorts

log = logging.getLogger("agentrio")

#: The run's stop reason when a model message ends truncated.
TRUNCATION_STOPS: dict[str, RunStopReason] = {
    "max_tokens": "max_tokens",
    "context_overflow": "context_overflow",
    "error": "model_error",
    "aborted": "aborted",
}

#: Stop reasons that are errors: their result carries ``error``.
ERROR_STOPS = frozenset(
    {
        "error",
        "model_error",
        "tool_error",
        "context_overflow",
        "compaction_failed",
        "output_invalid",
        "budget",
    }
)

#: Stop reasons of a failed turn: ``on_failure="rollback"`` takes its
#: messages back out of history.
FAILURE_STOPS = ERROR_STOPS | {"aborted", "timeout"}

#: A run's usage before it spends any (``Usage`` is frozen: one serves every run).
NO_USAGE = Usage()

#: Tool calls written as text instead of through the native protocol.
TEXT_TOOL_CALL = re.compile(
    r"<\s*(?:invoke|function_calls|function_call|tool_call|tool_use|antml:invoke)\b"
    r"|<\|(?:tool_call|python_tag)\|>",
    re.IGNORECASE,
)

#: Left in history when a run stops at ``Limits.max_turns``, so that the
#: model knows, if the session goes on, that it was stopped.
MAX_TURNS_NOTE = (
    "[The run stopped here: it reached its limit of {} model requests before the task was finished.]"
)

PROTOCOL_REPAIR = (
    "Your previous reply wrote tool calls as text (for example `<invoke>` or "
    "`<tool_call>` markup); text is never executed. Call tools only through "
    "the native tool-calling interface, and do not write tool-call markup."
)


@attrs.define(eq=False)
class TurnMark:
    """Where the turn being run started in the activity's counters."""

    messages: int
    requests: int
    tool_calls: int
    claimed: int
    usage: Usage = NO_USAGE
    #: The input that started the turn (its next-turn prompt, else the
    #: first next-step input); every other input claimed in the turn joined it.
    owner: str | None = None
    #: With typed output: the converted answer, and the invalid answers sent
    #: back so far.
    output: Any = None
    output_retries: int = 0
    #: Committed history's length when the turn started, and whether a
    #: compaction has replaced it since (a rollback then keeps the turn).
    history: int = 0
    compacted: bool = False


@attrs.define(eq=False)
class LiveMessage:
    """The assistant message streaming right now."""

    assembler: MessageAssembler = attrs.field(factory=MessageAssembler)
    #: The model request attempt it comes from (process-local, dsh 7.6).
    attempt: str = attrs.field(factory=lambda: new_id("attempt"))
    #: Whether ``message_start`` was emitted for it.
    announced: bool = False
    #: With typed output: what the answer says so far, and the reader of it.
    partial: Any = None
    reader: PartialOutput | None = None


class Activity:
    """One run of an agent: turns, until both queues are empty or a turn
    stops it.

    Runs in a task its agent owns and changes the agent's journal and inbox
    only through ``ports``. The run works on a copy of history (``new_messages``
    is what it added); everything it commits is journaled first.

    Guarantees: ``execute`` never raises for a run that ended: a cancel
    (``cancel``, or the agent's ``timeout``) or a failure in a hook ends it
    with a stop reason, and it always leaves a provider-valid history behind:
    an interrupted stream's visible text is kept, every tool call is
    answered, the open step and turn are closed.
    """

    def __init__(self, ports: ActivityPorts, *, continuing: bool = False) -> None:
        self.ports = ports
        #: Whether the run first continues a turn that crash repair closed:
        #: one turn that asks the model without claiming input (the repaired
        #: history ends with the interrupted step's answered calls).
        self._continuing = continuing
        #: ``emit(EventType, **fields)``: the agent's, called directly.
        self.emit = ports.emit
        self.spec = ports.spec
        self.journal = ports.journal
        self._state = ports.journal.state
        #: State transitions announced and not journaled yet (see ``state``).
        self._transitions: list[Record] = []
        self._hooks = ports.spec.hooks
        self.scope = trio.CancelScope()
        self.cancel_cause: str | None = None
        # The run's working copy of history (committed history is the
        # journal's), and its provider projection, grown a message at a time.
        self._context = ports.journal.context()
        self._compactor = Compactor(ports)
        #: A summary running beside the run (``AgentSpec.compaction``).
        self._background: BackgroundSummary | None = None
        #: The output budget of this run's requests (None: the adapter's).
        self._max_tokens: int | None = None
        self.new_messages: list[Message] = []
        self.usage = NO_USAGE
        self.turns = 0
        self.requests = 0
        self.tool_calls = 0
        self.claimed: list[QueuedInput] = []
        #: The result each claimed input gets: that of the turn it was in.
        self.answers: dict[str, RunResult] = {}
        #: The typed output of the run's last turn.
        self.output: Any = None
        self.error: str | None = None
        self._mark: TurnMark | None = None
        self._live: LiveMessage | None = None
        self._batch: ToolBatch | None = None
        #: The last model message asked for tools, and no model answer to
        #: their results has come yet.
        self._more_tools = False

    def _batch_ports(self) -> BatchPorts:
        # Made per batch and dropped with it: held by the activity, its bound
        # methods would make a cycle that only the garbage collector frees.
        return BatchPorts(
            agent=self.ports,
            state=self.state,
            append=self.append,
            tool_started=self.tool_started,
            commit_result=self.commit_tool_result,
            add_usage=self.add_usage,
            calls_so_far=self._calls_so_far,
            count_calls=self._count_calls,
        )

    @property
    def _open_turn(self) -> TurnMark:
        """The mark of the turn in progress (there is one while a turn runs)."""
        assert self._mark is not None
        return self._mark

    def _calls_so_far(self) -> int:
        return self.tool_calls - self._open_turn.tool_calls

    def _count_calls(self, count: int) -> None:
        self.tool_calls += count

    # -- plumbing -------------------------------------------------------------

    def state(self, name: str) -> None:
        """Enter state ``name`` of the step machine: announced, and journaled
        (a compact record, made durable with the step) with the next record
        the run appends, ahead of it: transitions reach the journal in the
        order of their ``state`` events, without a write of their own."""
        self._transitions.append(StateEntered(name))
        self.emit(State, name=name)

    async def append(self, *records: Record) -> None:
        """Journal ``records``, after the state transitions not journaled yet.
        Every record the run writes goes through here, or follows ``flush``."""
        if self._transitions:
            records = (*self._transitions, *records)
            self._transitions.clear()
        await self.journal.append(*records)

    async def flush(self) -> None:
        """Journal the state transitions not journaled yet: before anything
        else of the run (the inbox, a compaction) writes to the journal."""
        if self._transitions:
            await self.append()

    def add_usage(self, usage: Usage) -> None:
        """Count usage spent on the run's behalf (a sub-agent's, say)."""
        if usage.cost is None and not usage.total_tokens:
            return  # no tokens at no known cost: adding it changes no sum
        self.usage = self.usage + usage
        if self._mark is not None:
            self._mark.usage = self._mark.usage + usage

    def cancel(self, cause: str) -> None:
        self.cancel_cause = cause
        self.scope.cancel()

    async def commit(self, message: Message, *, announced: bool = False) -> None:
        """Append ``message`` to the journal, the run's context and its
        events; an assistant message with its usage's cost."""
        if isinstance(message, AssistantMessage) and message.usage.cost is None:
            usage = self.ports.prices.priced(message.usage, message.provider, message.model)
            if usage.cost is not None:  # (unpriced, the message stays as it is)
                message = attrs.evolve(message, usage=usage)
        await self.append(MessageAppended(message))
        self._context.append(message)
        self.new_messages.append(message)
        if isinstance(message, AssistantMessage):
            self.add_usage(message.usage)
            self._compactor.observe(message, len(self._context.history))
        if not announced:
            self.emit(MessageStart, role=message.role, message=message)
        self.emit(MessageEnd, message=message)

    def tool_started(self, call: ToolCall, mode: str | None = None) -> None:
        self.emit(
            ToolExecutionStart,
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            mode=mode,
        )

    async def commit_tool_result(
        self, call: ToolCall, result: ToolResultMessage, duration: float = 0.0
    ) -> None:
        if call.id not in self._state.started_calls:
            self.tool_started(call)  # never dispatched: its start and end come together
        self.emit(
            ToolExecutionEnd,
            tool_call_id=call.id,
            tool_name=call.name,
            is_error=result.is_error,
            result=result,
            duration=duration,
        )
        await self.commit(result)

    # -- the run --------------------------------------------------------------

    async def execute(self) -> RunResult:
        ports = self.ports
        with tracing.run_span(self.spec.name, ports.agent_id, ports.session_id) as span:
            result = await self._execute()
            span.stopped(result)
        return result

    async def _execute(self) -> RunResult:
        self.emit(AgentStart, name=self.spec.name)
        journaled = self._state.system_prompt
        if journaled is not None and journaled != self.spec.system_prompt:
            self.emit(
                Notice,
                kind="system_prompt_differs",
                text=f"this session goes on with the system prompt its journal holds "
                f"({self._state.system_prompt_digest}), not the spec's ({prompt_digest(self.spec.system_prompt)})",
            )
        stop: RunStopReason = "aborted"  # unless the run gets further than an outer cancel lets it
        timeout = self.spec.limits.timeout
        if timeout is not None:
            self.scope.deadline = trio.current_time() + timeout
        try:
            with self.scope, with_initiator(Initiator(self.ports.agent_id)):
                stop = await self._turns()
        except Exception as exc:
            log.exception("agent %s: run failed", self.ports.agent_id)
            stop, self.error = "error", _describe_error(exc)
        finally:
            if self.scope.cancelled_caught or (self.cancel_cause and stop == "completed"):
                # (A cancel before the run reached a checkpoint still aborts it.)
                stop = "aborted" if self.cancel_cause else "timeout"
            # Closing the open step and turn must finish even when the agent
            # is torn down; it is bounded by ABANDON_AFTER. (A run that
            # closed everything itself skips the shield: entering a cancel
            # scope costs about 1% of a tool turn.)
            try:
                if self._left_open():
                    with trio.CancelScope(shield=True):
                        await self._settle(stop)
            except Exception as exc:
                # The journal refused to close the run (its store failed, or
                # the session's lease was lost): the run still ends, as an error.
                log.exception("agent %s: could not settle the run", self.ports.agent_id)
                closing = _describe_error(exc)
                # A run that had failed keeps its own error first (dsh 7.10:
                # the repair's failure keeps the original one).
                first = self.error if stop in ERROR_STOPS else None
                stop = "error"
                self.error = f"{first} (then, while closing the run: {closing})" if first else closing
            if self._background is not None:  # (left only by a failure to close the turn)
                with trio.CancelScope(shield=True):
                    await self._drop_background()
            error = self.error if stop in ERROR_STOPS else None
            cause = self.cancel_cause if stop == "aborted" else None
            self.emit(
                AgentEnd,
                stop_reason=stop,
                new_messages=list(self.new_messages),
                usage=self.usage,
                turns=self.turns,
                error=error,
                steps=self.requests,
                cancel_cause=cause,
            )
        return RunResult(
            stop,
            list(self.new_messages),
            self.usage,
            self.turns,
            error,
            steps=self.requests,
            cancel_cause=cause,
            output=self.output,
        )

    async def _turns(self) -> RunStopReason:
        inbox = self.ports.inbox
        while inbox or self._continuing:
            stop = await self._turn()
            if stop != "completed":
                return stop
        return "completed"

    async def _turn(self) -> RunStopReason:
        self.turns += 1
        self._mark = TurnMark(
            len(self.new_messages),
            self.requests,
            self.tool_calls,
            len(self.claimed),
            history=len(self._state.messages),
        )
        turn = self._state.turn + 1
        with tracing.turn_span(turn, self.ports.session_id) as span:
            await self.append(TurnStarted(turn))
            self.emit(TurnStart, turn=turn)
            stop = await self._steps()
            self.state("done")
            await self._end_turn(stop)
            span.ended(stop)
        return stop

    async def _end_turn(self, stop: RunStopReason) -> None:
        # A summary still running is dropped: it applies within its turn only.
        await self._drop_background()
        turn = self._state.turn
        cause = self.cancel_cause if stop == "aborted" else None
        error = self.error if stop in ERROR_STOPS else None
        await self.append(TurnEnded(turn, stop, cause, error))
        rolled_back = await self._roll_back(turn, stop)
        await self.journal.sync()
        self.emit(
            TurnEnd,
            turn=turn,
            stop_reason=stop,
            cancel_cause=cause,
            has_more_tool_calls=self._more_tools,
            rolled_back=rolled_back,
        )
        self._more_tools = False
        if self._state.goal is not None:
            await goals.after_turn(self.ports, stop)
        self._answer_turn(stop, cause, rolled_back > 0)

    async def _roll_back(self, turn: int, stop: RunStopReason) -> int:
        """After a failed turn whose input asked for it, take the turn's
        messages back out of history (jai-mono: the caller's context stays as
        it was before the run); returns how many. The journal keeps them."""
        mark = self._mark
        if mark is None or stop not in FAILURE_STOPS or mark.compacted:
            return 0
        if self.ports.on_failure(mark.owner) != "rollback":
            return 0
        taken = len(self._state.messages) - mark.history
        if taken > 0:
            await self.append(RolledBack(mark.history, turn))
            self._context = self.journal.context()
            self._compactor = Compactor(self.ports)
        return taken

    def _answer_turn(self, stop: RunStopReason, cause: str | None, rolled_back: bool = False) -> None:
        """Give every input the turn claimed the turn's own result."""
        mark = self._mark
        if mark is None:
            return
        self._mark = None
        self.output = mark.output
        messages = self.new_messages[mark.messages :]
        for queued in self.claimed[mark.claimed :]:
            self.answers[queued.id] = RunResult(
                stop,
                messages,
                mark.usage,
                1,
                self.error if stop in ERROR_STOPS else None,
                steps=self.requests - mark.requests,
                joined=queued.id != mark.owner,
                rolled_back=rolled_back,
                cancel_cause=cause,
                output=mark.output,
            )

    async def _end_step(self) -> None:
        step = self._state.step
        await self.append(StepEnded(step))
        self.emit(StepEnd, step=step, has_more_tool_calls=self._more_tools)

    async def _steps(self) -> RunStopReason:
        """The steps of one turn; returns the turn's stop reason."""
        inbox = self.ports.inbox
        # A continued turn answers the input it had taken in: follow-ups wait
        # for their own turns.
        target: Target = "next_step" if self._continuing else "next_turn"
        outcome: RunStopReason | None = None  # None: the model is owed a request
        max_tokens_seen = False
        first = True
        while True:
            if target == "next_turn":
                prompt = inbox.next_turn[0].id if inbox.next_turn else None
            await self.flush()
            claimed = await inbox.claim(target)
            if target == "next_turn" and claimed:
                ids = [q.id for q in claimed]
                self._open_turn.owner = prompt if prompt in ids else ids[0]
            target = "next_step"
            self.claimed += claimed
            admitted = await self._pre_step(claimed) if claimed else []
            if isinstance(admitted, Reject):
                return "blocked"
            if not admitted and outcome is not None:
                if self._hooks and self._hooks.turn_stopping:
                    await bail(self._hooks.turn_stopping, self.ports.handle)
                if inbox.next_step:
                    continue
                return "max_tokens" if max_tokens_seen else outcome
            if not admitted and first:
                if not self._continuing:
                    return "completed"
                if _answered(self._context.history):
                    # The crash fell after the turn's last answer: it was over.
                    self._continuing = False
                    return "completed"
            first = self._continuing = False
            outcome = await self._step(admitted)
            if outcome == "max_tokens":
                max_tokens_seen = True
            elif outcome not in (None, "completed"):
                return outcome

    async def _pre_step(self, claimed: list[QueuedInput]) -> list[UserMessage] | Reject:
        # A waterfall: each listener sees the input the one before admitted.
        for listener in listeners(self._hooks.pre_step if self._hooks else None):
            decision = await _callbacks.call(
                listener, PreStep(self.ports.handle, self._state.turn, self._state.step + 1, claimed)
            )
            if isinstance(decision, Reject):
                return decision
            if decision is not None:
                claimed = [as_queued(m) for m in decision]
        return [q.message for q in claimed]

    async def _step(self, admitted: list[UserMessage]) -> RunStopReason | None:
        step = self._state.step + 1
        with tracing.step_span(step, self.ports.session_id):
            await self.append(StepStarted(step))
            self.emit(StepStart, step=step)
            for message in admitted:
                await self.commit(message)
            outcome = await self._step_body()
            await self._end_step()
        return outcome

    async def _step_body(self) -> RunStopReason | None:
        self.state("build_context")
        max_turns = self.spec.limits.max_turns
        if max_turns is not None and self.requests - self._open_turn.requests >= max_turns:
            await self.commit(UserMessage(MAX_TURNS_NOTE.format(max_turns)))
            return "max_turns"
        if await self._compact_if_due() is not None:
            return "compaction_failed"
        if (over := self._over_budget()) is not None:
            self.error = over
            return "budget"
        await self._journal_prompt()
        request = await self._build_request()
        self.state("call_model")
        self.requests += 1
        message = await self._continue_cut_reply(await self._call_model(request))
        calls = message.tool_calls  # (a property that builds the list)
        self._more_tools = bool(calls) and not message.truncated
        if message.truncated:
            self.error = message.error
            for call in calls:
                await self.commit_tool_result(
                    call,
                    error_result(
                        call,
                        TOOL_NOT_STARTED,
                        f"the model's output was cut off ({message.stop_reason}), "
                        "so this call was not executed.",
                    ),
                )
            return TRUNCATION_STOPS[message.stop_reason]
        if not calls:
            return await self._check_output(message)
        self._batch = ToolBatch(self._batch_ports(), calls)
        outcome = await self._batch.run()
        if self._batch.error is not None:
            self.error = self._batch.error
        self._batch = None
        return outcome

    def _over_budget(self) -> str | None:
        """Why the next request would take the run past ``Limits.max_cost``
        (what the run spent, plus the request's input as the compactor
        estimates it, at the input price of the model first in line), or None."""
        max_cost = self.spec.limits.max_cost
        if max_cost is None:
            return None
        model = member(self.spec.model, 0)
        provider, name = getattr(model, "provider", ""), getattr(model, "model", "")
        price = (
            self.ports.prices.price(provider, name)
            if isinstance(provider, str) and isinstance(name, str)
            else None
        )
        spent = self.usage.cost if self.usage.total_tokens else 0.0
        if price is None or spent is None:
            return f"max_cost is set but no price is known for {model_name(model)}, so the cost cannot be kept to"
        estimate = spent + self._compactor.tokens(self._context.history) * price.input / 1_000_000
        if estimate > max_cost:
            return (
                f"the next request would take the run to about ${estimate:.4f}, past max_cost ${max_cost:g}"
            )
        return None

    async def _check_output(self, message: AssistantMessage) -> RunStopReason | None:
        """With typed output, the answer must parse: a valid one completes the
        turn with its value; an invalid one goes back to the model with the
        error (None: another request is owed), ``output_retries`` times."""
        spec = self.spec.output_spec
        if spec is None:
            return "completed"
        try:
            self._open_turn.output = spec.parse(message.text)
        except OutputInvalid as invalid:
            if self._open_turn.output_retries >= self.spec.limits.output_retries:
                self.error = invalid.message
                return "output_invalid"
            self._open_turn.output_retries += 1
            await self.commit(UserMessage(invalid.message))
            return None
        return "completed"

    async def _continue_cut_reply(self, message: AssistantMessage) -> AssistantMessage:
        """Continue a text reply cut by the output limit, up to
        ``Limits.continue_on_max_tokens`` times (see ``continuation``)."""
        limits = self.spec.limits
        for _ in range(limits.continue_on_max_tokens):
            if not should_continue(message):
                break
            self._max_tokens = raised_budget(message, self._max_tokens, limits.max_output_tokens)
            await self.commit(UserMessage(CONTINUE_PROMPT))
            self.requests += 1
            message = await self._call_model(await self._build_request())
        return message

    @property
    def system_prompt(self) -> str:
        """The session's system prompt: the journaled one (a restored
        session's), else the spec's."""
        journaled = self._state.system_prompt
        return self.spec.system_prompt if journaled is None else journaled

    async def _journal_prompt(self) -> None:
        """Journal the system prompt before the first request built on it."""
        if self._state.system_prompt is None:
            prompt = self.spec.system_prompt
            await self.append(SystemPromptSet(prompt, prompt_digest(prompt)))

    async def _build_request(self) -> ModelRequest:
        system_prompt = self.system_prompt
        tools = [tool.spec for tool in self.ports.tools.values()]
        hook = self._hooks.prepare_context if self._hooks else None
        if not hook:
            return ModelRequest(system_prompt, self._context.messages(), tools, **self._request_options())
        context = RequestContext(system_prompt, list(self._context.history), tools)
        for listener in listeners(hook):
            context = await _callbacks.call(listener, context) or context
        return self._request_from(context)

    # -- the model request ----------------------------------------------------

    async def _call_model(self, request: ModelRequest) -> AssistantMessage:
        """One model request with its retries and its one protocol repair;
        returns the committed assistant message."""
        attempt = 1
        repair: _Repair | None = None  # the protocol repair, once sent
        compacted = False
        error = None
        fallback = 0  # which of a FallbackModel's models takes the request
        while True:
            chosen = await choose_model(self.ports, request, "step", attempt, error)
            model = member(chosen, fallback)
            live = self._live = LiveMessage()
            hook = self._hooks.on_assistant_stream if self._hooks else None
            observe = functools.partial(bail, hook) if hook else None
            with tracing.chat_span(model, request, self.ports.session_id) as chat:
                error = await stream_model(
                    model, request, self._on_stream_event, observe, start=self.ports.start_actor
                )
                if error is None and live.assembler.done is None:
                    error = ProviderError(
                        type=CONNECTION_ERROR, message="the stream ended without a stop reason"
                    )
                chat.answered(live.assembler, error)
            done = live.assembler.done  # (None only with an error)
            if (
                error is None
                and done is not None
                and done.stop_reason == "context_overflow"
                and not compacted
            ):
                # Overflow reported in-band (Anthropic's model_context_window_exceeded):
                # compact and retry once, as for the overflow error; when nothing
                # could be compacted the cut message stays, its calls unrun.
                compacted = True
                if (await self._compact("overflow")).compacted:
                    self._withdraw(live, "context_overflow")
                    request = await self._rebuild_request(repair)
                    continue
            if error is not None and error.type == CONTEXT_OVERFLOW and not compacted:
                # The recover path: compact, rebuild the request, retry once.
                self._withdraw(live, "context_overflow")
                compacted = True
                outcome = await self._compact("overflow")
                if outcome.compacted:
                    request = await self._rebuild_request(repair)
                    continue
                if outcome.error:
                    error = attrs.evolve(error, message=f"{error.message} ({outcome.error})")
                live = self._live = LiveMessage()
            if error is not None:
                delay = await self._retry_delay(model, error, attempt)
                if delay is not None:
                    self._withdraw(live, "retry")
                    tracing.event(
                        "agentrio.retry", attempt=attempt, delay=delay, **{"error.type": error.type}
                    )
                    self.emit(RequestRetry, error=error, attempt=attempt, delay=delay)
                    await trio.sleep(delay)
                    attempt += 1
                    # Rebuilt: a prepare_context that reads the time or the inbox sees the retry.
                    request = await self._rebuild_request(repair)
                    continue
                if (following := fallback_index(chosen, fallback, error)) is not None:
                    self._withdraw(live, "fallback")
                    names = model_name(model), model_name(member(chosen, following))
                    tracing.event(
                        "agentrio.fallback", **{"from": names[0], "to": names[1], "error.type": error.type}
                    )
                    self.emit(ModelFallback, from_model=names[0], to_model=names[1], error=error)
                    fallback, attempt = following, 1
                    request = await self._rebuild_request(repair)
                    continue
                stop: StopReason = "context_overflow" if error.type == CONTEXT_OVERFLOW else "error"
                message = live.assembler.interrupted(stop, str(error))
            else:
                message = live.assembler.message()
                if repair is None and request.tools and _writes_tool_calls_as_text(message):
                    self._withdraw(live, "protocol_repair")
                    repair = await self._repair(message)
                    base = request if repair.context is None else self._request_from(repair.context)
                    request = _with_protocol_repair(base, repair.text)
                    continue
            self._live = None
            if message.content or error is None:
                await self.commit(message, announced=live.announced)
            else:
                # A failed request that said nothing leaves no empty message
                # in history (providers refuse one), but a marker in the journal.
                await self.append(RequestFailed(str(error), message.stop_reason))
                if live.announced:
                    self.emit(MessageDiscard, reason=message.stop_reason, attempt=live.attempt)
            return message

    async def _compact_if_due(self) -> str | None:
        """At a step boundary: apply a background summary that is ready, and
        compact (or start summarizing beside the run) when the next request
        is past the threshold. Returns the error that stops the run, if any."""
        failed = False
        job = self._background
        if job is not None and job.done.is_set():
            self._background = None
            await self.flush()
            outcome = await self._compactor.finish(job, self._context.history)
            self._compacted(outcome)
            failed = outcome.error is not None
        if not self._compactor.due(self._context.history):
            return None
        if self.spec.compaction == "background" and not failed:
            if self._background is None:
                self._background = self._compactor.start_background(
                    self._context.history, len(self._state.messages)
                )
            return None
        return (await self._compact("threshold")).error

    async def _drop_background(self) -> None:
        job, self._background = self._background, None
        if job is not None:
            await self._compactor.drop(job)

    async def _compact(self, reason: str) -> CompactionOutcome:
        """Compact the run's history; the run goes on from what is left."""
        await self._drop_background()  # superseded
        await self.flush()
        outcome = await self._compactor.compact(self._context.history, len(self._state.messages), reason)
        self._compacted(outcome)
        return outcome

    def _compacted(self, outcome: CompactionOutcome) -> None:
        self.add_usage(outcome.usage)
        if outcome.compacted:
            if self._mark is not None:
                self._mark.compacted = True
            self._context = GrowingProjection([*self._state.messages, *self._state.step_messages])
        elif outcome.error:
            self.error = outcome.error

    async def _rebuild_request(self, repair: _Repair | None) -> ModelRequest:
        if repair is None:
            return await self._build_request()
        base = await self._build_request() if repair.context is None else self._request_from(repair.context)
        return _with_protocol_repair(base, repair.text)

    async def _repair(self, message: AssistantMessage) -> _Repair:
        """What the model is told after writing tool calls as text: the
        hook's text (None: the default), or a ``RequestContext`` the repair
        request is built from instead of the step's (jai-mono:
        ``directive.context ?? prepared``), with the default text."""
        answer = await bail(self._hooks.on_protocol_violation if self._hooks else None, message)
        if isinstance(answer, RequestContext):
            return _Repair(PROTOCOL_REPAIR, answer)
        return _Repair(answer or PROTOCOL_REPAIR)

    def _request_from(self, context: RequestContext) -> ModelRequest:
        return ModelRequest(
            context.system_prompt,
            project_tool_protocol(context.messages),
            list(context.tools),
            **self._request_options(),
        )

    def _request_options(self) -> dict[str, Any]:
        return {
            "max_tokens": self._max_tokens,
            "output": self.spec.output_spec,
            "prompt_cache": self.spec.prompt_cache,
            "cache_key": self.ports.session_id,
        }

    def _on_stream_event(self, event: StreamEvent) -> None:
        live = self._live
        assert live is not None  # events come while a message streams
        live.assembler.feed(event)
        if type(event) is StreamStart:  # (stream events are final classes)
            live.announced = True
            self.emit(MessageStart, role="assistant", attempt=live.attempt)
        else:
            self.emit(MessageUpdate, delta=event, attempt=live.attempt)
            if self.spec.output_spec is not None and isinstance(event, TextDelta):
                self._follow_output(live, event.text)

    def _follow_output(self, live: LiveMessage, text: str) -> None:
        """``output_update`` whenever what the streaming answer says changes."""
        if live.reader is None:
            assert self.spec.output_spec is not None  # (followed only then)
            live.reader = self.spec.output_spec.partial_reader()
        partial = live.reader.feed(text)
        if partial is not None and partial != live.partial:
            live.partial = partial
            self.emit(OutputUpdate, output=partial)

    def _withdraw(self, live: LiveMessage, reason: str) -> None:
        if live.announced:
            self.emit(MessageDiscard, reason=reason, attempt=live.attempt)
            tracing.event("agentrio.discard", reason=reason)
        self._live = None

    async def _retry_delay(self, model: Model, error: ProviderError, attempt: int) -> float | None:
        policy = getattr(model, "retry_policy", None)
        default = policy.delay(error, attempt) if policy is not None else None
        # A waterfall: each listener's answer is the next one's default.
        delay = default
        for listener in listeners(self._hooks.on_request_error if self._hooks else None):
            delay = await _callbacks.call(listener, RequestError(self.ports.handle, error, attempt, delay))
        return delay

    # -- settling after a cancel, a time-out or a failure ---------------------

    def _left_open(self) -> bool:
        """Whether the run left a stream, a tool batch, a step, a turn or a
        state transition for ``_settle`` to close (or journal)."""
        state = self._state
        return (
            self._live is not None
            or self._batch is not None
            or state.step_open
            or state.turn_open
            or bool(self._transitions)
        )

    async def _settle(self, stop: RunStopReason) -> None:
        """Close whatever the run left open so that history stays valid: keep
        an interrupted stream's visible text, answer every unanswered call,
        end the step and the turn."""
        state = self._state
        if self._live is not None:
            live, self._live = self._live, None
            message = live.assembler.interrupted("error" if stop == "error" else "aborted", self.error)
            if message.content:
                await self.commit(message, announced=live.announced)
            elif live.announced:
                self.emit(MessageDiscard, reason=stop)
                tracing.event("agentrio.discard", reason=stop)
        known = await self._batch.settle() if self._batch is not None else {}
        self._batch = None
        if state.step_open:
            for call in state.open_calls():
                result, duration = known.get(call.id) or (
                    error_result(
                        call, TOOL_ABORTED if call.id in state.started_calls else ABORTED_BEFORE_DISPATCH
                    ),
                    0.0,
                )
                await self.commit_tool_result(call, result, duration)
            await self._end_step()
        if state.turn_open:
            self.state("done")
            await self._end_turn(stop)
        await self.flush()


@attrs.frozen
class _Repair:
    """The one protocol repair of a request: the text sent, and the context
    the hook gave to build the request from (None: the step's)."""

    text: str
    context: RequestContext | None = None


def _answered(history: list[Message]) -> bool:
    """Whether history ends with the model's final answer (no tool asked)."""
    return bool(history) and isinstance(history[-1], AssistantMessage) and not history[-1].tool_calls


def _with_protocol_repair(request: ModelRequest, text: str) -> ModelRequest:
    return attrs.evolve(request, messages=[*request.messages, UserMessage(text)])


def _describe_error(exc: BaseException) -> str:
    # A nursery's group of one says nothing more than its error.
    exc = sole_error(exc)
    return f"{type(exc).__name__}: {exc}"


def _writes_tool_calls_as_text(message: AssistantMessage) -> bool:
    return not message.tool_calls and bool(TEXT_TOOL_CALL.search(message.text))
