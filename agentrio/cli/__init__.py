"""The ``agentrio`` command: a small dispatcher over command modules.

Each module in ``COMMANDS`` has ``register(subparsers)``, which adds its
subcommand and sets ``handler`` (``args -> exit status``) on its parser.
Agent commands take their shared options from ``options.add_agent_options``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata

from .._errors import sole_error
from . import acp, chat, demo, mcp, run, serve, sessions
from .errors import CommandError
from .options import add_global_options

COMMANDS = (run, chat, sessions, acp, serve, mcp, demo)


def version() -> str:
    try:
        return metadata.version("agentrio")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentrio", description="LLM agents as supervised trio actors.")
    parser.add_argument("--version", action="version", version=f"agentrio {version()}")
    add_global_options(parser)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
