"""``agentrio acp``: an ACP agent on stdin/stdout, for editors (Zed, say).

The editor starts it and speaks the Agent Client Protocol over its stdin and
stdout; logs go to stderr. Its model, base URL, permission and store come
from the same layers as every command's (agentrio config shows them).
Exit codes: 0 the editor closed the connection; 1 it could not start (no
model, a missing API key, an unusable store or --spec); 2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import trio

from ..gateway import AgentFactory, SpecError, open_hub
from ..gateway.acp.terminals import uses_client_terminals
from ..gateway.agents import PERMISSIONS
from ..gateway.stdio import serve_stdio
from ..journal import SQLiteStore, Store, StoreError
from ..tools.sandbox import Sandbox
from . import CommandParsers
from .config import Config
from .errors import USAGE, CommandError
from .options import (
    add_log_level_option,
    add_sandbox_option,
    checked_url,
    help_text,
    is_dsn,
    resolve_sandbox,
    start_logging,
)


def add_gateway_options(parser: argparse.ArgumentParser) -> None:
    """The options ``acp`` and ``serve`` share. ``--model`` and ``--db`` stay
    unset when not given (``SUPPRESS``), so that the same options given
    before the command are not hidden."""
    parser.add_argument(
        "--model",
        default=argparse.SUPPRESS,
        help="provider:model, e.g. openai:gpt-4.1 or anthropic:claude-sonnet-4-5",
    )
    parser.add_argument("--base-url", help="the provider's endpoint, for a compatible server")
    parser.add_argument("--cwd", type=Path, help="workspace for clients that give none (default: here)")
    parser.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        help="the session store: an SQLite file, or a PostgreSQL DSN that gateways on several hosts "
        "share (default: $AGENTRIO_DB, else the user data dir)",
    )
    parser.add_argument(
        "--spec", metavar="MODULE:ATTR", help="your own AgentSpec, or a function cwd -> AgentSpec"
    )
    parser.add_argument(
        "--permission",
        choices=PERMISSIONS,
        default=argparse.SUPPRESS,
        help="ask before side effects (default), allow everything, or refuse side effects",
    )
    add_log_level_option(parser)
    add_sandbox_option(parser)


def factory_and_store(args: argparse.Namespace) -> tuple[AgentFactory, Store, str]:
    """The agents' factory, the store, and the line that says the tools' sandbox
    (for the command to print once it serves). A PostgreSQL DSN makes a
    ``PostgresStore`` (its lease ``args.lease`` seconds, if the command has
    that option), whose sessions every gateway on it serves."""
    start_logging(args)
    config = Config.load(args)
    if config["permission"] not in PERMISSIONS:
        raise CommandError(
            f"permission must be one of {', '.join(PERMISSIONS)}, got {config['permission']!r}", status=USAGE
        )
    sandbox, line = resolve_sandbox(config["sandbox"], config["permission"])
    factory = AgentFactory(
        config["model"], checked_url(config["base_url"]), config["permission"], args.spec, sandbox
    )
    try:
        factory.check()
    except SpecError as exc:
        raise CommandError(str(exc)) from None
    if is_dsn(config["db"]):
        from ..journal.postgres import PostgresStore  # needs psycopg, an optional dependency

        lease = getattr(args, "lease", None)
        try:
            return factory, PostgresStore(config["db"], **({} if lease is None else {"lease": lease})), line
        except ValueError as exc:
            raise CommandError(str(exc), status=USAGE) from None
    db = Path(config["db"])
    db.parent.mkdir(parents=True, exist_ok=True)
    return factory, SQLiteStore(str(db)), line


def terminals_said(sandbox: Sandbox | None) -> str:
    """Where ``bash`` runs when the editor offers terminals: there only when
    no sandbox confines commands here, since the editor's are not confined."""
    if uses_client_terminals(sandbox):
        return "bash runs in the editor's terminal when it offers one, with the editor's rights"
    return "bash runs here, in the sandbox, even when the editor offers terminals"


def register(subparsers: CommandParsers) -> None:
    parser = subparsers.add_parser(
        "acp",
        description=help_text(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_gateway_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    factory, store, sandbox_line = factory_and_store(args)
    print(f"agentrio: {sandbox_line}; {terminals_said(factory.sandbox)}", file=sys.stderr)

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
