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
from collections.abc import Sequence
from importlib import metadata
from typing import NoReturn

from .._errors import sole_error
from .errors import USAGE, CommandError

#: The command modules, in the order --help lists them.
COMMANDS = ("run", "chat", "sessions", "config", "acp", "serve", "demo")
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


def build_parser() -> argparse.ArgumentParser:
    from .options import add_global_options

    parser = Parser(prog="agentrio", description="LLM agents as supervised trio actors.")
    parser.add_argument(*VERSION_FLAGS, action="version", version=f"agentrio {version()}")
    add_global_options(parser)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        importlib.import_module(f".{command}", __name__).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    if given[:1] and given[0] in VERSION_FLAGS:
        print(f"agentrio {version()}")
        return 0
    args = build_parser().parse_args(given)
    try:
        return args.handler(args)
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
