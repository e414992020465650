"""Tools: what a model may call, and what a call gives back."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, TypeAlias, TypeGuard

import attrs

from ..messages import TOOL_FAILED, Document, Image, Part, Text, ToolResultMessage, Usage, is_str_or_parts
from ..messages.checks import is_optional_str
from ..models import ToolSpec
from .process import ProcessResult, run_process
from .schema import ArgumentValidator, argument_errors, schema_problems

ExecutionMode = Literal["parallel", "exclusive"]
EXECUTION_MODES = ("parallel", "exclusive")


@attrs.frozen
class ToolResult:
    """What a tool returns. ``details`` is for a UI or a log and never reaches
    the model; ``concludes_turn`` ends the turn once this call's batch is
    committed, without another model request; ``fatal`` (an error nothing can
    recover from) ends the run with stop reason ``tool_error``: calls not yet
    started are not started. An error result's ``error_code`` is
    ``TOOL_FAILED`` unless it says otherwise. ``context`` is deferred
    context: once this result is committed it is queued as next-step input,
    so the model reads it with the results, before its next request."""

    content: str | list[Part] = attrs.field(validator=is_str_or_parts)
    is_error: bool = attrs.field(default=False, kw_only=True)
    details: Any = attrs.field(default=None, kw_only=True)
    concludes_turn: bool = attrs.field(default=False, kw_only=True)
    fatal: bool = attrs.field(default=False, kw_only=True)
    error_code: str | None = attrs.field(default=None, kw_only=True, validator=is_optional_str)
    context: str | None = attrs.field(default=None, kw_only=True, validator=is_optional_str)

    def to_message(self, tool_call_id: str, tool_name: str) -> ToolResultMessage:
        content: list[Part] = [Text(self.content)] if isinstance(self.content, str) else list(self.content)
        return ToolResultMessage(
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            content=content,
            is_error=self.is_error,
            details=self.details,
            error_code=(self.error_code or TOOL_FAILED) if self.is_error else None,
        )


#: What a tool may return besides a ``ToolResult`` or a str.
MEDIA = (Image, Document)


def is_content(value: object) -> TypeGuard[str | Image | Document | list[str | Text | Image | Document]]:
    """Whether ``value`` is content a tool may return as it is: a str, an
    ``Image``/``Document``, or a list of ``str | Text | Image | Document``."""
    if isinstance(value, str | Image | Document):
        return True
    return type(value) is list and all(isinstance(item, str | Text | Image | Document) for item in value)


def tool_result(value: object) -> ToolResult:
    """What a tool returned, as a ``ToolResult``: one as it is, content
    (``is_content``) as its parts; anything else is a ``TypeError``."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    if is_content(value):
        items = value if isinstance(value, list) else [value]
        return ToolResult([Text(item) if isinstance(item, str) else item for item in items])
    raise TypeError(
        "a tool must return a ToolResult, a str, an Image or Document, or a list of "
        f"str/Text/Image/Document, got {type(value).__name__}"
    )


@attrs.define(eq=False)
class ToolContext:
    """What a running tool knows about its call, and what it may do."""

    agent_id: str
    session_id: str
    tool_call_id: str
    tool_name: str
    _report: Callable[[Any], None] = attrs.field(alias="report", repr=False)
    _spawn_child: Callable[..., AbstractAsyncContextManager[Any]] | None = attrs.field(
        default=None, alias="spawn_child", kw_only=True, repr=False
    )
    _add_usage: Callable[[Usage], None] | None = attrs.field(
        default=None, alias="add_usage", kw_only=True, repr=False
    )
    _on_denied: Callable[[str, str | None, str], None] | None = attrs.field(
        default=None, alias="on_denied", kw_only=True, repr=False
    )

    def report(self, progress: Any) -> None:
        """Publish progress (any JSON-serializable value) as a
        ``tool_execution_update`` event."""
        self._report(progress)

    def spawn_child(self, spec: Any, *, setup: Any = None) -> AbstractAsyncContextManager[Any]:
        """``async with ctx.spawn_child(spec) as child``: a child ``Agent`` (of
        the ``AgentSpec`` ``spec``) of the
        calling agent for the length of the block. It lives in the caller's
        supervision tree, its events are forwarded on the caller's stream as
        ``child_event``, and it is disposed when the block ends (cancelling
        the caller cancels it, cause ``parent``)."""
        if self._spawn_child is None:
            raise RuntimeError(f"{self.tool_name} starts sub-agents and must be called by an agent")
        return self._spawn_child(spec, setup)

    def add_usage(self, usage: Usage) -> None:
        """Count model usage the tool spent (a sub-agent, a summarizer) in
        the usage of the run that called it."""
        if self._add_usage is not None:
            self._add_usage(usage)

    def sandbox_denied(self, kind: str, target: str | None, line: str) -> None:
        """Publish a ``sandbox_denied`` event: the sandbox refused the call's
        command a ``"path"`` or a ``"network"`` connection (``target``), as
        the error ``line`` tells."""
        if self._on_denied is not None:
            self._on_denied(kind, target, line)

    async def run_process(self, command: str | Sequence[str], **options: Any) -> ProcessResult:
        """Run a supervised subprocess (see ``agentrio.tools.process.run_process``
        for the options), reporting its output as it arrives as progress
        ``{"stream": "stdout" | "stderr", "text": ...}``."""
        return await run_process(
            command,
            on_output=lambda stream, text: self.report({"stream": stream, "text": text}),
            **options,
        )


#: What a tool's ``execute`` may return (see ``tool_result``).
ToolOutput: TypeAlias = ToolResult | str | Image | Document | list[str | Text | Image | Document]
Execute = Callable[[dict[str, Any], ToolContext], Awaitable[ToolOutput]]
Preview = Callable[[dict[str, Any]], "Awaitable[str] | str"]


def _check_mode(mode: object) -> None:
    if not callable(mode) and mode not in EXECUTION_MODES:
        raise ValueError(f"execution_mode must be one of {EXECUTION_MODES} or a callable, got {mode!r}")


#: What model providers accept as a tool name.
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _type_error(attribute: attrs.Attribute[Any], expected: str, value: Any) -> TypeError:
    return TypeError(f"Tool.{attribute.name}: expected {expected}, got {type(value).__name__!r}")


def _valid_name(tool: Tool, attribute: attrs.Attribute[Any], name: Any) -> None:
    if not isinstance(name, str):
        raise _type_error(attribute, "a str", name)
    if not TOOL_NAME.fullmatch(name):
        raise ValueError(
            f"Tool.name: expected 1 to 64 letters, digits, '_' or '-' (what model providers accept), "
            f"got {name!r}; rename the tool"
        )


def _valid_description(tool: Tool, attribute: attrs.Attribute[Any], description: Any) -> None:
    if not isinstance(description, str):
        raise _type_error(attribute, "a str (what the model reads about the tool; '' for none)", description)


def _valid_parameters(tool: Tool, attribute: attrs.Attribute[Any], parameters: Any) -> None:
    if not isinstance(parameters, dict):
        raise _type_error(attribute, "a JSON Schema of type 'object', as a dict", parameters)
    if problems := schema_problems(parameters):
        raise ValueError(
            "; ".join(f"Tool.parameters{where} of {tool.name!r}: {why}" for where, why in problems)
        )


def _valid_execute(tool: Tool, attribute: attrs.Attribute[Any], execute: Any) -> None:
    expected = "an async function (args, ctx)"
    if not callable(execute):
        raise _type_error(attribute, expected, execute)
    if not _is_async(execute):
        raise TypeError(
            f"Tool.execute: expected {expected}, got a function that is not async: {execute!r}; "
            "define it with async def"
        )
    try:
        inspect.signature(execute).bind(None, None)
    except ValueError:
        pass  # no signature to check (a builtin)
    except TypeError:
        raise TypeError(
            f"Tool.execute: expected {expected}, got {execute!r}, which cannot take those two arguments"
        ) from None


def _is_async(fn: Any) -> bool:
    """Whether calling ``fn`` gives a coroutine: an async function, a partial
    of one, or an object with an async ``__call__``."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def _valid_mode(tool: Tool, attribute: attrs.Attribute[Any], mode: Any) -> None:
    expected = f"one of {EXECUTION_MODES} or a function (args) -> mode"
    if callable(mode):
        return
    if not isinstance(mode, str):
        raise _type_error(attribute, expected, mode)
    if mode not in EXECUTION_MODES:
        raise ValueError(f"Tool.execution_mode: expected {expected}, got {mode!r}")


def _valid_preview(tool: Tool, attribute: attrs.Attribute[Any], preview: Any) -> None:
    if preview is not None and not callable(preview):
        raise _type_error(attribute, "a function (args) -> str, sync or async, or None", preview)


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

    Every field is checked when the tool is made and when it is changed: a
    wrong type raises ``TypeError``, a wrong value ``ValueError``, each
    naming the field, what it expects and what it got. The name must be what
    model providers accept (``^[a-zA-Z0-9_-]{1,64}$``); ``parameters`` must
    be a valid JSON Schema (Draft 2020-12) of type object whose patterns
    the linear-time engine can run (see ``schema``).
    """

    name: str = attrs.field(validator=_valid_name)
    description: str = attrs.field(validator=_valid_description)
    parameters: dict[str, Any] = attrs.field(validator=_valid_parameters)
    execute: Execute = attrs.field(validator=_valid_execute)
    execution_mode: ExecutionMode | Callable[[dict[str, Any]], ExecutionMode] = attrs.field(
        default="parallel", kw_only=True, validator=_valid_mode
    )
    preview: Preview | None = attrs.field(default=None, kw_only=True, validator=_valid_preview)
    _validator: Any = attrs.field(init=False, default=None, repr=False)
    _spec: ToolSpec | None = attrs.field(init=False, default=None, repr=False)

    @property
    def spec(self) -> ToolSpec:
        """The tool as a model sees it (read for every request): one
        ``ToolSpec`` while the name, description and parameters stay the
        objects they are (it holds the same parameters dict, so a schema
        changed in place shows in it as it did in a new one)."""
        spec = self._spec
        if (
            spec is None
            or spec.name is not self.name
            or spec.description is not self.description
            or spec.parameters is not self.parameters
        ):
            spec = self._spec = ToolSpec(self.name, self.description, self.parameters)
        return spec

    def mode_for(self, args: dict[str, Any]) -> ExecutionMode:
        mode = self.execution_mode(args) if callable(self.execution_mode) else self.execution_mode
        _check_mode(mode)
        return mode

    def argument_errors(self, args: dict[str, Any]) -> list[str]:
        """Why ``args`` do not fit ``parameters``, one line per failing
        field. Never raises: arguments nested too deeply to validate, and a
        schema that fails while validating them (a ``$ref`` that resolves
        nowhere), are reported in the list, as errors of this call."""
        validator = self._validator
        if validator is None or validator.schema is not self.parameters:
            validator = self._validator = ArgumentValidator(self.parameters)
        return argument_errors(validator, args)
