"""``agentrio worker``: run sessions from a PostgreSQL store as one worker of
a fleet (``Runtime.serve``) until SIGINT or SIGTERM; then running turns get
a grace to end, the rest are left for another worker to continue, and every
session is given up at once. Exit status 0 after a signal, 1 for a mistake
(a bad --spec, a DSN that is not PostgreSQL, a store that cannot be
opened)."""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
from collections.abc import Mapping

import trio

from ..actors.spec import AgentSpec
from ..journal import StoreError
from ..supervisors import Runtime
from . import CommandParsers
from .errors import CommandError
from .options import add_log_level_option, help_text, imported, is_dsn, start_logging


def register(subparsers: CommandParsers) -> None:
    parser = subparsers.add_parser(
        "worker",
        description=help_text(__doc__),
    )
    parser.add_argument(
        "--db",
        metavar="DSN",
        default=argparse.SUPPRESS,
        help="the PostgreSQL store (a libpq connection string or URI; default: $AGENTRIO_DB)",
    )
    parser.add_argument(
        "--spec",
        metavar="MODULE:ATTR",
        action="append",
        required=True,
        help="an AgentSpec, a list of them, or a mapping name -> AgentSpec (repeatable)",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=100,
        metavar="N",
        help="the most sessions run at once (default: 100)",
    )
    parser.add_argument(
        "--idle-release",
        type=float,
        default=30.0,
        metavar="S",
        help="give a session up after S idle seconds (default: 30)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=5.0,
        metavar="S",
        help="on SIGINT/SIGTERM, let running turns end within S seconds (default: 5)",
    )
    parser.add_argument(
        "--lease",
        type=float,
        default=None,
        metavar="S",
        help="how long a lease lasts unless renewed (default: the store's, 15 s)",
    )
    add_log_level_option(parser)
    parser.set_defaults(handler=run)


def load_specs(references: list[str]) -> dict[str, AgentSpec]:
    """The specs named by ``MODULE:ATTR`` references, by spec name."""
    specs: dict[str, AgentSpec] = {}
    for reference in references:
        found = imported(reference)
        if isinstance(found, AgentSpec):
            found = {found.name: found}
        elif isinstance(found, (list, tuple)) and all(isinstance(s, AgentSpec) for s in found):
            found = {s.name: s for s in found}
        if not isinstance(found, Mapping) or not all(isinstance(s, AgentSpec) for s in found.values()):
            raise CommandError(
                f"--spec {reference} is {found!r}: expected an AgentSpec, a list of them, "
                "or a mapping name -> AgentSpec"
            )
        specs.update(found)
    return specs


def _dsn(args: argparse.Namespace) -> str:
    dsn = getattr(args, "db", None) or os.environ.get("AGENTRIO_DB")
    if not dsn:
        raise CommandError("agentrio worker needs --db DSN (a PostgreSQL connection string) or $AGENTRIO_DB")
    if not is_dsn(dsn):
        raise CommandError(
            f"agentrio worker needs a PostgreSQL store: --db {dsn!r} is not a connection string"
        )
    return dsn


def run(args: argparse.Namespace) -> int:
    start_logging(args)
    if args.max_sessions < 1:
        raise CommandError(f"--max-sessions must be at least 1, got {args.max_sessions}")
    if not args.idle_release >= 0:
        raise CommandError(f"--idle-release must be a number of seconds, got {args.idle_release}")
    dsn = _dsn(args)
    specs = load_specs(args.spec)
    from ..journal.postgres import PostgresStore  # needs psycopg, an optional dependency

    options = {} if args.lease is None else {"lease": args.lease}
    try:
        store = PostgresStore(dsn, **options)
    except ValueError as exc:
        raise CommandError(str(exc)) from None

    async def main() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with Runtime(store) as rt, trio.open_nursery() as serving:
                serve = functools.partial(
                    rt.serve,
                    specs,
                    max_sessions=args.max_sessions,
                    idle_release=args.idle_release,
                    grace=args.grace,
                )
                await serving.start(serve)
                print(
                    f"agentrio worker {store.holder}: serving {', '.join(specs)}", file=sys.stderr, flush=True
                )
                async for _ in signals:
                    break
                # Graceful stop: serve gives its sessions up (within its
                # grace). Only serve is cancelled: the agents' turns end as
                # it decides, not by the Runtime's cancel.
                serving.cancel_scope.cancel()

    try:
        trio.run(main)
    except StoreError as exc:
        raise CommandError(str(exc)) from None
    return 0
