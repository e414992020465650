"""The options every agent command shares, and where their values come from.

``add_agent_options(parser)`` gives a command ``--model --base-url --cwd
--permission --sandbox --resume --session --db --tools --max-turns``; ``add_db_option(parser)`` gives ``--db``
alone. ``--db`` and ``--model`` are global too: ``agentrio --db x.db
sessions list`` and ``agentrio sessions list --db x.db`` mean the same.
Command parsers leave an option they were not given unset (``SUPPRESS``), so
a value given before the command is not hidden by a default after it.

``Settings.load(args)`` takes each value from the layers of ``config``:
the command line, the environment, the project's ``agentrio.toml``, the
user's ``config.toml``, the default.
``settings.model()`` builds the adapter, refusing a missing API key before
any request is sent.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs

from .config import PROJECT_FILE, Config, user_file
from .errors import USAGE, CommandError

if TYPE_CHECKING:
    from ..tools.permissions import Policy
    from ..tools.sandbox import Sandbox

TOOLS = ("coding", "none")


def help_text(doc: str) -> str:
    """A module's docstring as ``--help`` shows it: without reST's double backquotes."""
    return doc.replace("``", "")


def port_number(text: str) -> int:
    """A TCP port for argparse: 0 (any free port) to 65535, never wrapped."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port: give 0 to 65535 (0 picks a free one)")
    return number


def positive_int(text: str) -> int:
    """A whole number of at least 1, for argparse."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {number}")
    return number


def add_global_options(parser: argparse.ArgumentParser) -> None:
    """``--db`` and ``--model`` before the command."""
    parser.add_argument(
        "--db",
        metavar="FILE",
        help="the session store (default: $AGENTRIO_DB, else the config files, else sessions.db in the user data dir)",
    )
    parser.add_argument(
        "--model", metavar="MODEL", help="provider:model, e.g. openai:gpt-4.1 (default: $AGENTRIO_MODEL)"
    )


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="the session store (default: $AGENTRIO_DB, else the config files, else sessions.db in the user data dir)",
    )


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """The options of a command that runs an agent."""
    # Imported here, as in the functions below: a command without an agent does not load them.
    from ..models.model_string import PROVIDERS

    providers = ", ".join(f"{name}:…" for name in PROVIDERS)
    parser.add_argument(
        "--model",
        metavar="MODEL",
        default=argparse.SUPPRESS,
        help=f"the model: {providers} (default: $AGENTRIO_MODEL, else the config files)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        default=argparse.SUPPRESS,
        help="the provider's endpoint, for compatible servers (a local one may need no API key)",
    )
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the workspace the tools may touch (default: the current directory)",
    )
    parser.add_argument(
        "--permission",
        choices=permissions(),
        default=argparse.SUPPRESS,
        help="ask before side effects (default), allow everything, or refuse side effects",
    )
    add_sandbox_option(parser, default=argparse.SUPPRESS)
    stored = parser.add_mutually_exclusive_group()
    stored.add_argument(
        "--resume",
        metavar="ID",
        default=argparse.SUPPRESS,
        help="continue the stored session ID (which must exist)",
    )
    stored.add_argument(
        "--session",
        metavar="ID",
        default=argparse.SUPPRESS,
        help="continue session ID, or start it under that id when it is new (said on stderr)",
    )
    add_db_option(parser)
    parser.add_argument(
        "--tools",
        choices=TOOLS,
        default=argparse.SUPPRESS,
        help="coding: read, write, edit, ls, grep, glob, bash in --cwd (default); none: no tools",
    )
    parser.add_argument(
        "--max-turns",
        type=positive_int,
        metavar="N",
        default=argparse.SUPPRESS,
        help="at most N model requests a run",
    )


def add_log_level_option(parser: argparse.ArgumentParser) -> None:
    """``--log-level``, for the commands that serve for long (see ``start_logging``)."""
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="logging on stderr (default: WARNING)",
    )


def start_logging(args: argparse.Namespace) -> None:
    """Log on stderr at ``--log-level``, each line marked as agentrio's."""
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="agentrio: %(levelname)s %(message)s")


def imported(reference: str) -> Any:
    """What ``--spec MODULE:ATTR`` names; a ``CommandError`` saying why
    when it names nothing."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise CommandError(f"--spec takes MODULE:ATTR, got {reference!r}")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise CommandError(f"--spec {reference}: {exc}") from None


def add_sandbox_option(parser: argparse.ArgumentParser, default: Any = None) -> None:
    from ..tools.sandbox import MODES

    parser.add_argument(
        "--sandbox",
        choices=MODES,
        default=default,
        help="what commands may write: only the workspace (default where bubblewrap or Landlock works), "
        "nothing, or anything (off); no network unless off. --permission read-only implies read-only",
    )


def resolve_sandbox(choice: str | None, permission: str) -> tuple[Sandbox | None, str]:
    """The sandbox of a command's tools (None: none), and a line that says
    so. Not chosen, it is ``read-only`` under ``--permission
    read-only``, else ``workspace-write``; ``off``, with a warning, where no
    mechanism can enforce one. A sandbox chosen but not enforceable is a
    ``CommandError``."""
    from ..tools.sandbox import MODES, Sandbox

    if choice is not None and choice not in MODES:
        raise CommandError(f"sandbox must be one of {', '.join(MODES)}, got {choice!r}", status=USAGE)
    if choice == "off":
        return None, "sandbox off: commands run with all your rights"
    backend = Sandbox.backend()
    if backend is None:
        if choice is not None:
            raise CommandError(f"--sandbox {choice}: no sandbox mechanism works here (install bubblewrap)")
        return None, "warning: no sandbox here (install bubblewrap): commands run with all your rights"
    mode = choice or ("read-only" if permission == "read-only" else "workspace-write")
    return Sandbox(mode), f"sandbox {mode} ({backend}, no network; --sandbox off lifts it)"


def is_dsn(db: str) -> bool:
    """Whether ``--db`` names a PostgreSQL database (a libpq URI or
    ``key=value`` connection string) rather than an SQLite file."""
    return db.startswith(("postgresql://", "postgres://")) or ("=" in db and not Path(db).exists())


def db_path(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> str:
    """The store's file, from every layer (``config.Config``)."""
    return str(Config.load(args, environ)["db"])


def checked_url(url: str | None) -> str | None:
    """``url`` when it can be an endpoint (http or https, with a host); a usage error otherwise."""
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CommandError(
            f"base URL {url!r} is not an http:// or https:// address (e.g. http://localhost:8000/v1)",
            status=USAGE,
        )
    return url


@attrs.frozen
class Settings:
    """What an agent command runs with, resolved from every source."""

    model_name: str | None
    base_url: str | None
    cwd: Path
    permission: str
    session: str | None
    db: str
    #: The session must be in the store already (``--resume``).
    resume: bool = False
    tools: str = "coding"
    max_turns: int | None = None
    system_prompt: str | None = None
    #: The sandbox asked for; None: the default (``resolve_sandbox``).
    sandbox: str | None = None

    @classmethod
    def load(cls, args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> Settings:
        config = Config.load(args, environ)
        permission = config["permission"]
        if permission not in permissions():
            raise CommandError(
                f"permission must be one of {', '.join(permissions())}, got {permission!r}", status=USAGE
            )
        tools = config["tools"]
        if tools not in TOOLS:
            raise CommandError(f"tools must be one of {', '.join(TOOLS)}, got {tools!r}", status=USAGE)
        cwd = Path(config["cwd"]).expanduser().resolve()
        if not cwd.is_dir():
            raise CommandError(f"cwd {cwd}: not a directory", status=USAGE)
        max_turns = config["max_turns"]
        if max_turns is not None and max_turns < 1:
            raise CommandError(f"max_turns must be a positive whole number, got {max_turns!r}", status=USAGE)
        return cls(
            model_name=config["model"],
            base_url=checked_url(config["base_url"]),
            cwd=cwd,
            permission=permission,
            session=getattr(args, "resume", None) or getattr(args, "session", None),
            resume=getattr(args, "resume", None) is not None,
            db=config["db"],
            tools=tools,
            max_turns=max_turns,
            system_prompt=config["system_prompt"],
            sandbox=config["sandbox"],
        )

    def model(self) -> Any:
        """The model adapter; a missing model or API key is a ``CommandError``."""
        from ..models import from_string
        from ..models.model_string import PROVIDERS

        if not self.model_name:
            raise CommandError(
                "no model: give --model provider:model, set $AGENTRIO_MODEL, "
                f'or put model = "…" in {PROJECT_FILE} or {user_file()}'
            )
        options: dict[str, Any] = {}
        if self.base_url:
            options["base_url"] = self.base_url
            prefix = self.model_name.partition(":")[0]
            if prefix in PROVIDERS and not os.environ.get(PROVIDERS[prefix][1]):
                options["api_key"] = None  # a compatible local server needs none
        try:
            return from_string(self.model_name, **options)
        except ValueError as exc:
            raise CommandError(str(exc)) from None


def permissions() -> tuple[str, ...]:
    """The names ``--permission`` takes (``tools.permissions.PRESETS``)."""
    from ..tools.permissions import PRESETS

    return tuple(PRESETS)


def permission_policy(permission: str) -> Policy:
    """The named preset (``tools.permissions.PRESETS``)."""
    from ..tools.permissions import PRESETS

    return PRESETS[permission]
