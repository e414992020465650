"""The ``agentrio`` command: a small dispatcher over command modules.

Each module in ``COMMANDS`` has ``register(subparsers)``, which adds its
subcommand and sets ``handler`` (``args -> exit status``) on its parser.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import acp, demo, serve, sessions
from .errors import CommandError

COMMANDS = (demo, sessions, acp, serve)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentrio", description="LLM agents as supervised trio actors.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except CommandError as exc:
        print(f"agentrio: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): not an error, and nothing more to say.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
