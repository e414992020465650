"""The slash commands an editor offers for an agentrio session.

They are announced with ``available_commands_update`` when a client starts,
loads, resumes or forks a session. A prompt whose text starts with one of
them (``/compact keep the API notes``) runs it instead of going to the
model, and is answered with a short message (``agent_message_chunk``) to
the client that sent it; any other text, ``/usr/bin`` included, is a prompt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from ...actors import CompactionFailed
from .jsonrpc import RpcError

if TYPE_CHECKING:
    from .sessions import Session, SessionHub


@attrs.frozen
class Command:
    """``/name [input]``: what it does, the hint for its input (None: it
    takes none), and ``run(session, hub, input)``, which returns the answer."""

    name: str
    description: str
    hint: str | None
    run: Callable[[Session, SessionHub, str], Awaitable[str]]

    def describe(self) -> dict[str, Any]:
        """ACP's ``AvailableCommand``."""
        described: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.hint is not None:
            described["input"] = {"hint": self.hint}
        return described


async def _compact(session: Session, hub: SessionHub, instructions: str) -> str:
    try:
        outcome = await session.agent.compact(instructions or None)
    except CompactionFailed as exc:
        return f"Compaction failed; the conversation is unchanged: {exc}"
    if not outcome.compacted:
        return "Nothing to compact yet: the conversation is short."
    return (
        f"Compacted the conversation from about {outcome.tokens_before:,} "
        f"to about {outcome.tokens_after:,} tokens."
    )


async def _model(session: Session, hub: SessionHub, name: str) -> str:
    if name:
        await session.set_model(name)
    return f"Model: {session.model}"


async def _mode(session: Session, hub: SessionHub, mode: str) -> str:
    if mode:
        session.set_mode(mode)
    return f"Mode: {session.modes.current} (modes: {', '.join(session.modes.policies)})"


async def _fork(session: Session, hub: SessionHub, count: str) -> str:
    at: int | None = None
    if count:
        try:
            at = int(count)
        except ValueError:
            return f"/fork takes a number of messages to keep, not {count!r}"
    fork = await hub.fork(session.id, session.cwd, at_message=at)
    kept = len(fork.agent.messages)
    return f"Forked into session {fork.id} ({kept} messages); load it to continue there."


async def _cost(session: Session, hub: SessionHub, argument: str) -> str:
    usage = session.agent.usage
    cost = "unknown (no price for this model)" if usage.cost is None else f"${usage.cost:.4f}"
    return (
        f"This session used {usage.input_tokens:,} input and {usage.output_tokens:,} output tokens "
        f"({usage.cache_read_tokens:,} read from cache, {usage.cache_write_tokens:,} written to it); "
        f"it cost {cost}."
    )


async def _rename(session: Session, hub: SessionHub, title: str) -> str:
    if not title:
        return "/rename takes the session's new title"
    return f"Renamed the session to “{await hub.rename(session.id, title)}”."


COMMANDS = {
    command.name: command
    for command in (
        Command(
            "compact",
            "Summarize the older part of the conversation to free the context",
            "what the summary must keep (optional)",
            _compact,
        ),
        Command("model", "Show the model, or switch to another", "provider:model (optional)", _model),
        Command("mode", "Show the permission mode, or switch to another", "ask, allow or read-only", _mode),
        Command("fork", "Copy this session into a new one", "how many messages to keep (optional)", _fork),
        Command("cost", "Tokens used and what they cost", None, _cost),
        Command("rename", "Give the session a title", "the new title", _rename),
    )
}


def available_commands_update() -> dict[str, Any]:
    """ACP's ``available_commands_update`` with every command."""
    return {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [command.describe() for command in COMMANDS.values()],
    }


def command_of(text: Any) -> tuple[Command, str] | None:
    """The command a prompt's text runs and its input, or None when the
    text is a prompt for the model."""
    if not isinstance(text, str) or not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    command = COMMANDS.get(name.strip())
    return None if command is None else (command, argument.strip())


async def run_command(command: Command, argument: str, session: Session, hub: SessionHub) -> str:
    """Run ``command``; its answer, or why it failed, in a sentence."""
    try:
        return await command.run(session, hub, argument)
    except RpcError as exc:
        return f"/{command.name} failed: {exc.message}"
