"""``agentrio mcp --spec MODULE:ATTR``: agents offered as an MCP server.

Each agent of the spec (an ``AgentSpec``, or a list of them) is one tool,
taking ``prompt`` and an optional ``session``. The server speaks on
stdin/stdout (for Claude Desktop, Cursor, an IDE), or with ``--http PORT``
over streamable HTTP at ``/mcp`` on ``--host`` (default 127.0.0.1).
Sessions are kept in ``--db FILE`` (default: ``$AGENTRIO_DB``, else in
memory while the server runs). Exit status 1 for a spec that cannot be
loaded or a port that cannot be bound.
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial

import trio

from .._errors import sole_error
from ..actors import AgentSpec
from ..journal import SQLiteStore, StoreError
from . import CommandParsers
from .errors import CommandError
from .options import add_db_option, help_text, imported


def register(subparsers: CommandParsers) -> None:
    parser = subparsers.add_parser(
        "mcp",
        description=help_text(__doc__),
    )
    parser.add_argument(
        "--spec", metavar="MODULE:ATTR", required=True, help="an AgentSpec, or a list of them"
    )
    parser.add_argument("--http", metavar="PORT", type=int, help="serve streamable HTTP at /mcp on this port")
    parser.add_argument(
        "--host", default="127.0.0.1", help="the address --http listens on (default: 127.0.0.1)"
    )
    add_db_option(parser)
    parser.set_defaults(handler=run)


def load_specs(reference: str) -> list[AgentSpec]:
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # a module of the working directory, as `python -m` finds it
    found = imported(reference)
    specs = [found] if isinstance(found, AgentSpec) else found
    if not isinstance(specs, list | tuple) or not specs or not all(isinstance(s, AgentSpec) for s in specs):
        raise CommandError(f"--spec {reference} is neither an AgentSpec nor a list of them")
    return list(specs)


def run(args: argparse.Namespace) -> int:
    from ..gateway.mcp_serve import serve_mcp  # the optional `mcp` extra

    specs = load_specs(args.spec)
    db = getattr(args, "db", None) or os.environ.get("AGENTRIO_DB")
    store = SQLiteStore(db) if db else None
    serve = partial(serve_mcp, specs, store=store, http=args.http, host=args.host)
    try:
        trio.run(serve)
    except Exception as raised:  # a user's mistake is one line; anything else is raised again
        exc = sole_error(raised)
        if isinstance(exc, OSError) and args.http is not None:
            raise CommandError(f"cannot serve on {args.host}:{args.http}: {exc.strerror or exc}") from None
        if isinstance(exc, StoreError | ValueError | TypeError):
            raise CommandError(str(exc)) from None
        raise
    return 0
