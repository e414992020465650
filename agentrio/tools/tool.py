"""Tools: what a model may call, and what a call gives back."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
import jsonschema

from ..messages import Part, Text, ToolResultMessage, Usage
from ..messages.typed import schema_errors
from ..models import ToolSpec
from .process import ProcessResult, run_process

if TYPE_CHECKING:
    from ..actors.agent import Agent

ExecutionMode = Literal["parallel", "exclusive"]
EXECUTION_MODES = ("parallel", "exclusive")


@attrs.frozen
class ToolResult:
    """What a tool returns. ``details`` is for a UI or a log and never reaches
    the model; ``concludes_turn`` ends the turn once this call's batch is
    committed, without another model request; ``fatal`` (an error nothing can
    recover from) ends the run with stop reason ``tool_error``: calls not yet
    started are not started."""

    content: str | list[Part]
    is_error: bool = attrs.field(default=False, kw_only=True)
    details: Any = attrs.field(default=None, kw_only=True)
    concludes_turn: bool = attrs.field(default=False, kw_only=True)
    fatal: bool = attrs.field(default=False, kw_only=True)

    def to_message(self, tool_call_id: str, tool_name: str) -> ToolResultMessage:
        content = [Text(self.content)] if isinstance(self.content, str) else list(self.content)
        return ToolResultMessage(
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            content=content,
            is_error=self.is_error,
            details=_storable(self.details),
        )


def _storable(details: Any) -> Any:
    """``details`` as the journal can store it: JSON data as it is, anything
    else as its ``repr``, so that a careless tool loses nothing and breaks
    no store."""
    if details is None:
        return None
    try:
        json.dumps(details)
    except (TypeError, ValueError):
        return repr(details)
    return details


@attrs.define(eq=False)
class ToolContext:
    """What a running tool knows about its call, and what it may do."""

    agent_id: str
    session_id: str
    tool_call_id: str
    tool_name: str
    _report: Callable[[Any], None] = attrs.field(alias="report", repr=False)
    #: The agent running the call (None outside an agent, as in a unit test).
    agent: Agent | None = attrs.field(default=None, kw_only=True, repr=False)
    _add_usage: Callable[[Usage], None] | None = attrs.field(
        default=None, alias="add_usage", kw_only=True, repr=False
    )

    def report(self, progress: Any) -> None:
        """Publish progress (any JSON-serializable value) as a
        ``tool_execution_update`` event."""
        self._report(progress)

    def add_usage(self, usage: Usage) -> None:
        """Count model usage the tool spent (a sub-agent, a summarizer) in
        the usage of the run that called it."""
        if self._add_usage is not None:
            self._add_usage(usage)

    async def run_process(self, command: str | Sequence[str], **options: Any) -> ProcessResult:
        """Run a supervised subprocess (see ``agentrio.tools.process.run_process``
        for the options), reporting its output as it arrives as progress
        ``{"stream": "stdout" | "stderr", "text": ...}``."""
        return await run_process(
            command,
            on_output=lambda stream, text: self.report({"stream": stream, "text": text}),
            **options,
        )


Execute = Callable[[dict[str, Any], ToolContext], Awaitable["ToolResult | str"]]
Preview = Callable[[dict[str, Any]], "Awaitable[str] | str"]


def _check_mode(mode: object) -> None:
    if not callable(mode) and mode not in EXECUTION_MODES:
        raise ValueError(f"execution_mode must be one of {EXECUTION_MODES} or a callable, got {mode!r}")


@attrs.define(eq=False)
class Tool:
    """A tool: a name, a description, a JSON Schema for its arguments, and an
    async ``execute(args, ctx)`` returning a ``ToolResult`` or a ``str``.

    ``execution_mode`` is ``"parallel"`` (safe to run beside other calls) or
    ``"exclusive"`` (side effects: runs alone), or a callable deciding from the
    arguments. The agent re-reads it before each dispatch, so changing it
    affects calls not yet started.

    ``preview(args)`` (sync or async) describes what a call would do, for a
    person asked to approve it: the command it runs, the diff it makes. It
    must not have side effects. See ``permissions.summarize_call``.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: Execute
    execution_mode: ExecutionMode | Callable[[dict[str, Any]], ExecutionMode] = attrs.field(
        default="parallel", kw_only=True
    )
    preview: Preview | None = attrs.field(default=None, kw_only=True)
    _validator: Any = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        _check_mode(self.execution_mode)
        if self.parameters.get("type", "object") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be a JSON Schema of type 'object'")
        try:
            jsonschema.Draft202012Validator.check_schema(self.parameters)
        except jsonschema.SchemaError as e:
            raise ValueError(f"tool {self.name!r}: invalid parameters schema: {e.message}") from None

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def mode_for(self, args: dict[str, Any]) -> ExecutionMode:
        mode = self.execution_mode(args) if callable(self.execution_mode) else self.execution_mode
        _check_mode(mode)
        return mode

    def argument_errors(self, args: dict[str, Any]) -> list[str]:
        """Why ``args`` do not fit ``parameters``, one line per failing field."""
        validator = self._validator
        if validator is None or validator.schema is not self.parameters:
            validator = self._validator = jsonschema.Draft202012Validator(self.parameters)
        return schema_errors(validator, args)
