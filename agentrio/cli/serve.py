"""``agentrio serve``: ACP over WebSocket at /acp, and the web console at /.

It prints the console's address (with its token) and serves until Ctrl-C or
SIGTERM, then closes every session. Exit codes: 0 stopped; 1 it could not
serve (the port is in use, the host is unknown or not this machine's, the
store cannot be opened); 2 a usage error (a port outside 0-65535, say).

With --db a PostgreSQL DSN, gateways on several hosts share the sessions:
each runs on the host that holds it, and a client of any host can open it,
prompt it and follow it; if its host dies, the next host prompted for it
takes it over (see agentrio.gateway.acp.remote).
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
from pathlib import Path

import trio

from .._errors import sole_error
from ..gateway import open_hub
from ..gateway.websocket import MIN_TOKEN, WebSocketOptions, is_loopback, serve_websocket, stored_token
from ..journal import StoreError
from . import CommandParsers
from .acp import add_gateway_options, factory_and_store
from .errors import USAGE, CommandError
from .options import help_text, port_number
from .paths import data_dir


def register(subparsers: CommandParsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        description=help_text(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument(
        "--port", type=port_number, default=8765, help="port (default: 8765; 0 picks a free one)"
    )
    parser.add_argument(
        "--token",
        help=f"the bearer token clients must give, at least {MIN_TOKEN} characters "
        "(default: one kept in the data directory, made on first use)",
    )
    parser.add_argument(
        "--root", type=Path, help="the folder every cwd a client names must be in (default: here)"
    )
    parser.add_argument(
        "--lease",
        type=float,
        default=None,
        metavar="S",
        help="with a PostgreSQL --db: how long this host's hold on a session lasts unless renewed "
        "(default: the store's, 15 s); a host that dies is noticed within it",
    )
    add_gateway_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.token is not None and len(args.token) < MIN_TOKEN:
        raise CommandError(f"--token must have at least {MIN_TOKEN} characters", status=USAGE)
    root = (args.root or Path.cwd()).resolve()
    if not root.is_dir():
        raise CommandError(f"--root {args.root}: not a directory", status=USAGE)
    factory, store, sandbox_line = factory_and_store(args)
    options = WebSocketOptions(token=args.token or stored_token(data_dir()))

    async def main() -> None:
        async with open_hub(
            store, factory, args.cwd, route_files=args.spec is None, root=root, sandbox=factory.sandbox
        ) as hub:
            listeners = await hub.nursery.start(serve_websocket, hub, options, args.host, args.port)
            host, port = listeners[0].socket.getsockname()[:2]
            print(f"agentrio: {sandbox_line}", file=sys.stderr, flush=True)
            if not is_loopback(args.host):  # said once bound: a bind error stays one line
                print(
                    f"agentrio: warning: serving on {args.host}, beyond this machine, without encryption: "
                    "the token and every session cross the network in clear unless a TLS proxy stands in front",
                    file=sys.stderr,
                    flush=True,
                )
            shown = f"[{host}]" if ":" in host else host
            print(f"agentrio console: http://{shown}:{port}/?token={options.token}", flush=True)
            print(f"ACP over WebSocket: ws://{shown}:{port}/acp (Authorization: Bearer <token>)", flush=True)
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    break  # an orderly stop: sessions are disposed, the store closed

    try:
        trio.run(main)
    except BaseException as raised:
        exc = sole_error(raised)
        if isinstance(exc, socket.gaierror):
            raise CommandError(f"cannot serve on {args.host}: no such host ({exc.strerror})") from None
        if isinstance(exc, OSError):
            raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc.strerror or exc}") from None
        if isinstance(exc, StoreError):
            raise CommandError(str(exc)) from None
        raise
    return 0
