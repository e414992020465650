"""The ``agentrio`` command: a small dispatcher over command modules.

Each module in ``COMMANDS`` has ``register(subparsers)``, which adds its
subcommand and sets ``handler`` (``args -> exit status``) on its parser.
Agent commands take their shared options from ``options.add_agent_options``.
The modules are imported when the parser is built, not with this package:
``agentrio --version`` (``-V``) answers before any of them is loaded.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import NoReturn

from .._errors import sole_error
from .errors import USAGE, CommandError

#: The command modules, in the order --help lists them, and what each does.
COMMANDS = {
    "run": "run an agent on a prompt and stream what it does",
    "chat": "an interactive session with a coding agent",
    "sessions": "list, show, export, fork and delete stored sessions",
    "config": "the settings every command would use here, and where each comes from",
    "acp": "serve the Agent Client Protocol on stdin/stdout (for editors such as Zed)",
    "serve": "serve ACP over WebSocket, with a web console",
    "mcp": "offer agents as MCP tools, over stdio or streamable HTTP",
    "demo": "play an offline agent session and print its events",
    "worker": "run sessions from a PostgreSQL store, as one worker of a fleet",
}
VERSION_FLAGS = ("-V", "--version")


def version() -> str:
    try:
        return metadata.version("agentrio")
    except metadata.PackageNotFoundError:
        return "unknown"


class Parser(argparse.ArgumentParser):
    """argparse, except that a usage error is one line (the usage is for ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class CommandParsers:
    """What a command module's ``register`` adds its parser to: the
    subparsers, each command listed with its line from ``COMMANDS``."""

    def __init__(self, subparsers: argparse._SubParsersAction[Parser]) -> None:
        self._subparsers = subparsers

    def add_parser(
        self,
        name: str,
        *,
        description: str | None = None,
        epilog: str | None = None,
        formatter_class: type[argparse.HelpFormatter] = argparse.HelpFormatter,
    ) -> argparse.ArgumentParser:
        return self._subparsers.add_parser(
            name, help=COMMANDS[name], description=description, epilog=epilog, formatter_class=formatter_class
        )


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (after the global options), if any."""
    words = iter(argv)
    for word in words:
        if word in ("--db", "--model"):
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given the arguments, only the command
    they name is built in full (the others are a line of --help), so that
    a command loads only what it needs."""
    from .options import add_global_options

    parser = Parser(prog="agentrio", description="LLM agents as supervised trio actors.")
    parser.add_argument(*VERSION_FLAGS, action="version", version=f"agentrio {version()}")
    add_global_options(parser)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = chosen_command(argv) if argv is not None else None
    for command, summary in COMMANDS.items():
        if argv is None or command == chosen:
            importlib.import_module(f".{command}", __name__).register(CommandParsers(subparsers))
        else:
            subparsers.add_parser(command, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    if given[:1] and given[0] in VERSION_FLAGS:
        print(f"agentrio {version()}")
        return 0
    args = build_parser(given).parse_args(given)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except BaseException as raised:
        exc = sole_error(raised)
        if isinstance(exc, CommandError):
            print(f"agentrio: error: {exc}", file=sys.stderr)
            return exc.status
        if isinstance(exc, KeyboardInterrupt):
            return 130
        if isinstance(exc, BrokenPipeError):
            # The reader went away (``| head``): not an error, and nothing more to say.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        raise
