"""``agentrio acp``: an ACP agent on stdin/stdout, for editors."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

import trio

from ..gateway import AgentFactory, SpecError, default_db, open_hub
from ..gateway.agents import PERMISSIONS
from ..gateway.stdio import serve_stdio
from ..journal import SQLiteStore, StoreError
from .errors import CommandError
from .options import add_sandbox_option, resolve_sandbox


def add_gateway_options(parser: argparse.ArgumentParser) -> None:
    """The options ``acp`` and ``serve`` share. ``--model`` and ``--db`` stay
    unset when not given (``SUPPRESS``), so that the same options given
    before the command are not hidden."""
    parser.add_argument("--model", default=argparse.SUPPRESS,
                        help="provider:model, e.g. openai:gpt-4.1 or anthropic:claude-sonnet-4-5")
    parser.add_argument("--base-url", help="the provider's endpoint, for a compatible server")
    parser.add_argument("--cwd", type=Path, help="workspace for clients that give none (default: here)")
    parser.add_argument("--db", type=Path, default=argparse.SUPPRESS,
                        help="the session store (default: $AGENTRIO_DB, else the user data dir)")
    parser.add_argument("--spec", metavar="MODULE:ATTR", help="your own AgentSpec, or a function cwd -> AgentSpec")
    parser.add_argument("--permission", choices=PERMISSIONS, default="ask",
                        help="ask before side effects (default), allow everything, or refuse side effects")
    add_sandbox_option(parser)
    parser.add_argument("--log-level", default="WARNING", type=str.upper, choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                        help="logging on stderr (default: WARNING)")


def factory_and_store(args: argparse.Namespace) -> tuple[AgentFactory, SQLiteStore]:
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="agentrio: %(levelname)s %(message)s")
    model = getattr(args, "model", None) or os.environ.get("AGENTRIO_MODEL")
    sandbox, line = resolve_sandbox(args.sandbox, args.permission)
    factory = AgentFactory(model, args.base_url, args.permission, args.spec, sandbox)
    try:
        factory.check()
    except SpecError as exc:
        raise CommandError(str(exc)) from None
    print(f"agentrio: {line}", file=sys.stderr)
    db = Path(getattr(args, "db", None) or default_db())
    db.parent.mkdir(parents=True, exist_ok=True)
    return factory, SQLiteStore(str(db))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "acp", help="serve the Agent Client Protocol on stdin/stdout (for editors such as Zed)"
    )
    add_gateway_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    factory, store = factory_and_store(args)

    async def main() -> None:
        async with open_hub(
            store, factory, args.cwd, route_files=args.spec is None, sandbox=factory.sandbox
        ) as hub:
            await serve_stdio(hub)

    try:
        trio.run(main)
    except StoreError as exc:
        raise CommandError(str(exc)) from None
    return 0
