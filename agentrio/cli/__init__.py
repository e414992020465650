"""The ``agentrio`` command.

Each subcommand lives in a module of its own with a ``register(subparsers)``
function that adds its parser and sets ``run`` (``args -> exit code``).
"""

from __future__ import annotations

import argparse
import sys

from . import demo

COMMANDS = (demo,)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentrio", description="Run LLM agents as supervised trio actors.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
