"""agentrio sessions: list, show, export, fork and delete the sessions of a store.

Exit codes: 0 done; 1 the store or the session is not there, or the store
cannot be read; 2 a usage error (a fork --as an id already taken, say).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable

import trio

from ..journal import (
    ForkRefused,
    SessionExists,
    SessionInfo,
    SessionNotFound,
    SQLiteStore,
    Store,
    StoreError,
    StoreNotFound,
)
from ..journal.codec import encode_record
from ..journal.fork import fork_session
from ..messages import converter
from . import CommandParsers
from .errors import USAGE, CommandError
from .options import add_db_option, db_path, help_text
from .session_tree import Node, session_tree, spawned_below
from .transcript import spent, timestamp, title, transcript

DB_VARIABLE = "AGENTRIO_DB"


def register(subparsers: CommandParsers) -> None:
    parser = subparsers.add_parser("sessions", description=help_text(__doc__))
    # --db may come before the command, before the action or after it.
    add_db_option(parser)
    store = argparse.ArgumentParser(add_help=False)
    add_db_option(store)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = actions.add_parser(
        "list",
        parents=[store],
        help="one line a session, as a tree, with its title",
        description="One line a session, titled by the first line of its first prompt: the sessions of child agents under the agent that spawned them, "
        "forks under the session they were cut from. A session whose parent was deleted is at the top, "
        "its PARENT marked [deleted].",
    )
    listing.add_argument(
        "--json", action="store_true", help="one JSON object a session, in the same order, for scripts"
    )
    listing.set_defaults(handler=_handler(list_sessions, reads_only=True))

    show = actions.add_parser("show", parents=[store], help="a session's transcript")
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--full", action="store_true", help="tool results in full")
    show.set_defaults(handler=_handler(show_session, reads_only=True))

    export = actions.add_parser("export", parents=[store], help="a session's journal as JSON lines")
    export.add_argument("session_id", metavar="ID")
    export.set_defaults(handler=_handler(export_session, reads_only=True))

    fork = actions.add_parser(
        "fork", parents=[store], help="a new session from a prefix of another; prints its id"
    )
    fork.add_argument("session_id", metavar="ID")
    cut = fork.add_mutually_exclusive_group(required=True)
    cut.add_argument("--at", type=int, metavar="N", help="keep the first N messages")
    cut.add_argument("--at-turn", type=int, metavar="T", help="keep the history as it was when turn T ended")
    fork.add_argument("--as", dest="fork_id", metavar="NEW_ID", help="the new session's id")
    fork.add_argument(
        "--repair",
        action="store_true",
        help="close a turn still open as crash repair would, instead of refusing",
    )
    fork.set_defaults(handler=_handler(fork_from))

    delete = actions.add_parser(
        "delete",
        parents=[store],
        help="remove a session and its journal",
        description="Remove a session and its journal. A session whose agent spawned child agents is "
        "refused, naming them, unless --with-children is given. Forks keep their own copy of the "
        "history and are never deleted with it.",
    )
    delete.add_argument("session_id", metavar="ID")
    delete.add_argument(
        "--with-children",
        action="store_true",
        help="delete the sessions of the agents it spawned too (and theirs)",
    )
    delete.set_defaults(handler=_handler(delete_session))


def _handler(
    command: Callable[[SQLiteStore, argparse.Namespace], Awaitable[None]],
    *,
    reads_only: bool = False,
) -> Callable[[argparse.Namespace], int]:
    """A handler running ``command`` on the store of ``--db``, its errors
    told plainly. A command that ``reads_only`` opens a store it cannot write
    (on a read-only filesystem, or a read-only file) read-only, which needs
    no write beside it; one it can write as usual, which upgrades an older one."""

    async def open_and_run(args: argparse.Namespace) -> None:
        # An existing file only: reading a mistyped path must not create one.
        read_only = reads_only and not _writable(args.db)
        async with SQLiteStore(args.db, create=False, read_only=read_only) as store:
            await command(store, args)

    def handler(args: argparse.Namespace) -> int:
        args.db = db_path(args)
        try:
            trio.run(open_and_run, args)
        except StoreNotFound:
            raise CommandError(f"no store at {args.db} (give --db, or set ${DB_VARIABLE})") from None
        except SessionExists as exc:
            raise CommandError(f"{exc}: give --as an id not taken", status=USAGE) from None
        except SessionNotFound:
            raise CommandError(f"no session {args.session_id!r} in {args.db}") from None
        except (StoreError, ForkRefused) as exc:
            raise CommandError(f"{exc}{_read_only_hint(args.db)}") from None
        return 0

    return handler


def _writable(db: str) -> bool:
    """Whether the store and its folder (where SQLite keeps its ``-wal`` and
    ``-shm`` files) can be written."""
    return os.access(db, os.W_OK) and os.access(os.path.dirname(os.path.abspath(db)), os.W_OK)


def _read_only_hint(db: str) -> str:
    """Why a store on a read-only filesystem cannot be opened, when it is on one."""
    try:
        read_only = bool(os.statvfs(os.path.dirname(os.path.abspath(db))).f_flag & os.ST_RDONLY)
    except OSError:
        return ""
    if not read_only:
        return ""
    return (
        " (its folder is on a read-only filesystem: sessions list, show and export read it there, "
        "the other actions need a copy somewhere writable, given as --db)"
    )


async def headlines(store: Store, nodes: list[Node]) -> dict[str, tuple[str, float | None]]:
    """Each session's title (``transcript.title``) and what it cost
    (``transcript.spent``), from one read of its journal."""
    found: dict[str, tuple[str, float | None]] = {}
    for node in nodes:
        session_id = node.summary.info.session_id
        try:
            records = (await store.load_session(session_id))[1]
        except SessionNotFound:  # deleted meanwhile
            found[session_id] = ("", None)
        else:
            found[session_id] = (title(records), spent(records))
    return found


async def titles(store: Store, nodes: list[Node]) -> dict[str, str]:
    """Each session's title (``transcript.title``), read from its journal."""
    return {session_id: named for session_id, (named, _) in (await headlines(store, nodes)).items()}


async def list_sessions(store: SQLiteStore, args: argparse.Namespace) -> None:
    nodes = session_tree(await store.list_summaries())
    if not nodes:
        print(f"no sessions in {args.db}", file=sys.stderr)
        return
    named = await headlines(store, nodes)
    if args.json:
        for node in nodes:
            print(json.dumps(_as_json(node, named), ensure_ascii=False))
        return
    rows = [
        (
            "ID",
            "AGENT",
            "CREATED",
            "MESSAGES",
            "LAST ACTIVITY",
            "CHILDREN",
            "FORKS",
            "PARENT",
            "COST",
            "TITLE",
        )
    ]
    for node in nodes:
        info = node.summary.info
        rows.append(
            (
                node.prefix + info.session_id,
                info.agent_name or "-",
                timestamp(info.created_at),
                str(node.summary.messages),
                timestamp(node.summary.updated_at),
                str(len(node.children)),
                str(len(node.forks)),
                node.relation,
                "-" if (cost := named[info.session_id][1]) is None else f"${cost:.4f}",
                named[info.session_id][0] or "-",
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def _as_json(node: Node, named: dict[str, tuple[str, float | None]]) -> dict[str, object]:
    title, cost = named[node.summary.info.session_id]
    return {
        **converter.unstructure(node.summary.info, SessionInfo),
        "title": title,
        "cost": cost,
        "messages": node.summary.messages,
        "updated_at": node.summary.updated_at,
        "children": list(node.children),
        "forks": list(node.forks),
    }


async def delete_session(store: SQLiteStore, args: argparse.Namespace) -> None:
    infos = await store.list_sessions()
    # Children of a session that is gone already are not its to take along.
    listed = any(info.session_id == args.session_id for info in infos)
    spawned = spawned_below(infos, args.session_id) if listed else []
    if spawned and not args.with_children:
        raise CommandError(
            f"session {args.session_id} has {len(spawned)} child agent session(s) below it "
            f"({', '.join(spawned)}): give --with-children to delete them too, or delete them first"
        )
    for session_id in [*spawned, args.session_id]:
        await store.delete_session(session_id)
        print(f"deleted session {session_id} from {args.db}", file=sys.stderr)


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
        store,
        args.session_id,
        at_message=args.at,
        at_turn=args.at_turn,
        fork_id=args.fork_id,
        repair=args.repair,
    )
    print(fork.info.session_id)
    print(
        f"forked {args.session_id} into {fork.info.session_id} with {fork.info.seed_length} messages",
        file=sys.stderr,
    )
