"""``agentrio serve``: ACP over WebSocket at /acp, and the web console at /.

It prints the console's address (with its token) and serves until Ctrl-C or
SIGTERM, then closes every session. Exit codes: 0 stopped; 1 it could not
serve (the port is in use, the host is unknown or not this machine's, the
store cannot be opened); 2 a usage error (a port outside 0-65535, say).
"""

from __future__ import annotations

import argparse
import signal
import socket

import trio

from .._errors import sole_error
from ..gateway import open_hub
from ..gateway.websocket import WebSocketOptions, new_token, serve_websocket
from ..journal import StoreError
from .acp import add_gateway_options, factory_and_store
from .errors import CommandError
from .options import help_text, port_number


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        description=help_text(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument(
        "--port", type=port_number, default=8765, help="port (default: 8765; 0 picks a free one)"
    )
    parser.add_argument("--token", help="the bearer token clients must give (default: a new random one)")
    add_gateway_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    factory, store = factory_and_store(args)
    options = WebSocketOptions(token=args.token or new_token())

    async def main() -> None:
        async with open_hub(store, factory, args.cwd, route_files=args.spec is None) as hub:
            listeners = await hub.nursery.start(serve_websocket, hub, options, args.host, args.port)
            host, port = listeners[0].socket.getsockname()[:2]
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
