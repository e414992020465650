"""Permission policies: may this tool call run?

A policy is a callable ``(call: ToolCall, tool: Tool)`` (sync or async)
answering ``"allow"``, ``"deny"``, ``"deny_and_stop"`` (deny, and stop the
run with ``permission_denied``) or ``"ask"`` (a person decides). It may
answer with a ``Decision`` instead, to give a reason; a ``Decision`` is a
``str`` equal to its verdict, so code that compares with plain strings keeps
working. ``decide`` turns any answer into a ``Decision``.

Built in: ``allow_all``, ``read_only`` and ``rules(...)``::

    policy = rules(
        allow("read"), allow("grep"), allow("glob"), allow("ls"),
        allow("bash", command="git status*"),
        deny("bash", command="rm -rf *", reason="never delete trees"),
        deny("write", path="*.env"),
        default="ask",
    )
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Literal, Self

import attrs

from .. import _callbacks
from ..messages import ToolCall
from .tool import Tool

Verdict = Literal["allow", "deny", "deny_and_stop", "ask"]
VERDICTS: tuple[Verdict, ...] = ("allow", "deny", "deny_and_stop", "ask")


class Decision(str):
    """A policy's verdict with an optional reason (given to the model on a
    deny, shown to a person on an ask). Equal to the plain verdict string:
    ``Decision("deny", "no") == "deny"``."""

    reason: str | None

    def __new__(cls, verdict: str, reason: str | None = None) -> Self:
        if verdict not in VERDICTS:
            raise ValueError(f"a permission decision is one of {VERDICTS}, got {verdict!r}")
        decision = super().__new__(cls, verdict)
        decision.reason = reason
        return decision

    @property
    def verdict(self) -> Verdict:
        return str(self)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Decision({str(self)!r}, reason={self.reason!r})"


Policy = Callable[[ToolCall, Tool], "str | Awaitable[str]"]


async def decide(policy: Policy, call: ToolCall, tool: Tool) -> Decision:
    """Ask ``policy`` about ``call`` and return its answer as a ``Decision``
    (a plain string answer has no reason). An answer that is not a verdict
    raises ``ValueError``."""
    answer = await _callbacks.call(policy, call, tool)
    if isinstance(answer, Decision):
        return answer
    if not isinstance(answer, str):
        # Documented: a ValueError, whatever the policy answered.
        raise ValueError(  # noqa: TRY004
            f"permission policy {policy!r} answered {answer!r}, not one of {VERDICTS}"
        )
    return Decision(answer)


def allow_all(call: ToolCall, tool: Tool) -> Verdict:
    """Every call runs."""
    return "allow"


def read_only(call: ToolCall, tool: Tool) -> Verdict:
    """Calls that only look (``parallel`` tools) run; anything with side
    effects (``exclusive``) needs a person's approval."""
    return "allow" if tool.mode_for(call.arguments) == "parallel" else "ask"


def refuse_side_effects(call: ToolCall, tool: Tool) -> Decision:
    """Calls that only look run; any side effect is refused, never asked."""
    if read_only(call, tool) == "allow":
        return Decision("allow")
    return Decision("deny", f"{call.name} has side effects and this session is read-only")


#: The policies a person picks by name (``--permission``): ``ask``: looking
#: is allowed, side effects are asked; ``allow``: all runs; ``read-only``:
#: side effects are refused.
PRESETS: dict[str, Policy] = {"ask": read_only, "allow": allow_all, "read-only": refuse_side_effects}


@attrs.frozen
class Rule:
    """One line of a ``rules`` policy: ``verdict`` for calls whose tool name
    matches ``tool`` and whose ``arguments`` each match their pattern.

    Patterns are shell-style globs (``*``, ``?``, ``[...]``), case-sensitive,
    matched against the whole value; a value that is not a string is matched
    as its JSON text (``true``, ``3``). A missing argument does not match.
    Patterns match text, not meaning: ``git status*`` also matches
    ``git status; rm -rf ~``, so allow rules for shell commands are a
    convenience, not a safeguard. Usually made with ``allow``, ``deny`` and
    ``ask``; build a ``Rule`` directly to match an argument named ``reason``.
    """

    verdict: Verdict = attrs.field(validator=attrs.validators.in_(VERDICTS))
    tool: str = "*"
    arguments: Mapping[str, str] = attrs.field(factory=dict)
    reason: str | None = None

    def matches(self, call: ToolCall) -> bool:
        if not fnmatch.fnmatchcase(call.name, self.tool):
            return False
        for name, pattern in self.arguments.items():
            if name not in call.arguments:
                return False
            value = call.arguments[name]
            text = value if isinstance(value, str) else json.dumps(value)
            if not fnmatch.fnmatchcase(text, pattern):
                return False
        return True

    def __str__(self) -> str:
        arguments = "".join(f", {name}={pattern!r}" for name, pattern in self.arguments.items())
        return f"{self.verdict}({self.tool!r}{arguments})"


def allow(tool: str = "*", /, **arguments: str) -> Rule:
    """Allow calls of ``tool`` (a glob over tool names) whose arguments match
    the given patterns: ``allow("bash", command="git status*")``."""
    return Rule("allow", tool, arguments)


def ask(tool: str = "*", /, **arguments: str) -> Rule:
    """Have a person approve calls of ``tool`` whose arguments match."""
    return Rule("ask", tool, arguments)


def deny(tool: str = "*", /, *, reason: str | None = None, stop: bool = False, **arguments: str) -> Rule:
    """Refuse calls of ``tool`` whose arguments match; ``reason`` is what the
    model is told (by default, the rule itself). With ``stop`` the run stops
    too (``permission_denied``)."""
    return Rule("deny_and_stop" if stop else "deny", tool, arguments, reason)


def _rule_tuple(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    return tuple(rules)


@attrs.frozen
class Rules:
    """A policy from rules: the first matching deny rule (one that stops the
    run before one that does not), else the first matching ask rule, else
    the first matching allow rule, else ``default``. Deny rules come first
    whatever their place in the list, so a broad allow never overrides a
    narrow deny."""

    rules: tuple[Rule, ...] = attrs.field(converter=_rule_tuple)
    default: Verdict = attrs.field(default="ask", validator=attrs.validators.in_(VERDICTS))

    def __call__(self, call: ToolCall, tool: Tool) -> Decision:
        for verdict in ("deny_and_stop", "deny", "ask", "allow"):
            for rule in self.rules:
                if rule.verdict == verdict and rule.matches(call):
                    return Decision(verdict, rule.reason or f"matched the rule {rule}")
        return Decision(self.default, f"no rule matched {call.name}; the default is {self.default}")


def rules(*rules: Rule, default: Verdict = "ask") -> Rules:
    """A policy made of ``allow``, ``ask`` and ``deny`` rules (see ``Rules``)."""
    return Rules(rules, default)


async def summarize_call(call: ToolCall, tool: Tool | None) -> str:
    """A readable description of what ``call`` would do, for a person asked
    to approve it: the tool's ``preview`` of the call (a command, a diff),
    or else the tool name with its arguments as JSON."""
    plain = f"{call.name}({json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)})"
    if tool is None or tool.preview is None:
        return plain
    try:
        preview: str = await _callbacks.call(tool.preview, call.arguments)
        return preview
    except Exception as e:  # noqa: BLE001 - a failed preview falls back to the plain call
        return f"{plain}\n(no preview: {e})"
