"""agentrio sessions: list, show, export, fork and delete the sessions of a store."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable

import trio

from ..journal import ForkRefused, SessionNotFound, SQLiteStore, StoreError, StoreNotFound
from ..journal.codec import encode_record
from ..journal.fork import fork_session
from .errors import CommandError
from .options import add_db_option, db_path
from .transcript import timestamp, transcript

DB_VARIABLE = "AGENTRIO_DB"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sessions", help="list, show, export, fork and delete stored sessions", description=__doc__
    )
    # --db may come before the command, before the action or after it.
    add_db_option(parser)
    store = argparse.ArgumentParser(add_help=False)
    add_db_option(store)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = actions.add_parser("list", parents=[store], help="one line a session")
    listing.set_defaults(handler=_handler(list_sessions))

    show = actions.add_parser("show", parents=[store], help="a session's transcript")
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--full", action="store_true", help="tool results in full")
    show.set_defaults(handler=_handler(show_session))

    export = actions.add_parser("export", parents=[store], help="a session's journal as JSON lines")
    export.add_argument("session_id", metavar="ID")
    export.set_defaults(handler=_handler(export_session))

    fork = actions.add_parser(
        "fork", parents=[store], help="a new session from a prefix of another; prints its id"
    )
    fork.add_argument("session_id", metavar="ID")
    cut = fork.add_mutually_exclusive_group(required=True)
    cut.add_argument("--at", type=int, metavar="N", help="keep the first N messages")
    cut.add_argument("--at-turn", type=int, metavar="T", help="keep the history as it was when turn T ended")
    fork.add_argument("--as", dest="fork_id", metavar="NEW_ID", help="the new session's id")
    fork.add_argument(
        "--repair", action="store_true", help="close a turn still open as crash repair would, instead of refusing"
    )
    fork.set_defaults(handler=_handler(fork_from))

    delete = actions.add_parser("delete", parents=[store], help="remove a session and its journal")
    delete.add_argument("session_id", metavar="ID")
    delete.set_defaults(handler=_handler(delete_session))


def _handler(
    command: Callable[[SQLiteStore, argparse.Namespace], Awaitable[None]],
) -> Callable[[argparse.Namespace], int]:
    """A handler running ``command`` on the store of ``--db``, its errors told plainly."""

    async def open_and_run(args: argparse.Namespace) -> None:
        # An existing file only: reading a mistyped path must not create one.
        async with SQLiteStore(args.db, create=False) as store:
            await command(store, args)

    def handler(args: argparse.Namespace) -> int:
        args.db = db_path(args)
        try:
            trio.run(open_and_run, args)
        except StoreNotFound:
            raise CommandError(f"no store at {args.db} (give --db, or set ${DB_VARIABLE})") from None
        except SessionNotFound:
            raise CommandError(f"no session {args.session_id!r} in {args.db}") from None
        except (StoreError, ForkRefused) as exc:
            raise CommandError(str(exc)) from None
        return 0

    return handler


async def list_sessions(store: SQLiteStore, args: argparse.Namespace) -> None:
    summaries = await store.list_summaries()
    if not summaries:
        print(f"no sessions in {args.db}", file=sys.stderr)
        return
    ids = {summary.info.session_id for summary in summaries}
    forks: dict[str | None, list] = {}
    for summary in summaries:
        parent = summary.info.parent_session_id
        forks.setdefault(parent if parent in ids else None, []).append(summary)
    rows = [("ID", "CREATED", "MESSAGES", "LAST ACTIVITY", "FORKS", "PARENT")]

    def add(summary, depth: int) -> None:
        info = summary.info
        parent = "-" if info.parent_session_id is None else f"{info.parent_session_id} ({info.seed_length} messages)"
        children = forks.get(info.session_id, [])
        tree = "   " * (depth - 1) + "└─ " if depth else ""
        rows.append(
            (
                tree + info.session_id,
                timestamp(info.created_at),
                str(summary.messages),
                timestamp(summary.updated_at),
                str(len(children)),
                parent,
            )
        )
        for child in children:
            add(child, depth + 1)

    # Forks under the session they were cut from, as a tree.
    for summary in forks.get(None, []):
        add(summary, 0)
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


async def delete_session(store: SQLiteStore, args: argparse.Namespace) -> None:
    await store.delete_session(args.session_id)
    print(f"deleted session {args.session_id} from {args.db}", file=sys.stderr)


async def show_session(store: SQLiteStore, args: argparse.Namespace) -> None:
    info, records = await store.load_session(args.session_id)
    for line in transcript(info, records, full=args.full):
        print(line)


async def export_session(store: SQLiteStore, args: argparse.Namespace) -> None:
    _, records = await store.load_session(args.session_id)
    for record in records:
        print(encode_record(record))


async def fork_from(store: SQLiteStore, args: argparse.Namespace) -> None:
    fork = await fork_session(
        store, args.session_id, at_message=args.at, at_turn=args.at_turn, fork_id=args.fork_id, repair=args.repair
    )
    print(fork.info.session_id)
    print(
        f"forked {args.session_id} into {fork.info.session_id} with {fork.info.seed_length} messages",
        file=sys.stderr,
    )
