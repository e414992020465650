"""The options every agent command shares, and where their values come from.

``add_agent_options(parser)`` gives a command ``--model --base-url --cwd
--permission --sandbox --session --db --tools --max-turns``; ``add_db_option(parser)`` gives ``--db``
alone. ``--db`` and ``--model`` are global too: ``agentrio --db x.db
sessions list`` and ``agentrio sessions list --db x.db`` mean the same.
Command parsers leave an option they were not given unset (``SUPPRESS``), so
a value given before the command is not hidden by a default after it.

``Settings.load(args)`` resolves each value, first found wins: the command
line, the environment (``AGENTRIO_MODEL``, ``AGENTRIO_DB``), an
``agentrio.toml`` in the working directory, the default.
``settings.model()`` builds the adapter, refusing a missing API key before
any request is sent.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from ..models import from_string
from ..models.model_string import PROVIDERS
from ..tools.permissions import PRESETS, Policy
from ..tools.sandbox import MODES as SANDBOXES
from ..tools.sandbox import Sandbox
from .errors import CommandError

CONFIG_FILE = "agentrio.toml"
DEFAULT_DB = "agentrio.db"
PERMISSIONS = tuple(PRESETS)
TOOLS = ("coding", "none")
#: option -> environment variable
ENVIRONMENT = {"model": "AGENTRIO_MODEL", "db": "AGENTRIO_DB"}
#: What agentrio.toml may set, and the type of each.
CONFIG_TYPES: dict[str, type] = {
    "model": str,
    "base_url": str,
    "cwd": str,
    "permission": str,
    "sandbox": str,
    "tools": str,
    "db": str,
    "max_turns": int,
    "system_prompt": str,
}
CONFIG_KEYS = tuple(CONFIG_TYPES)


def help_text(doc: str) -> str:
    """A module's docstring as ``--help`` shows it: without reST's double backquotes."""
    return doc.replace("``", "")


def add_global_options(parser: argparse.ArgumentParser) -> None:
    """``--db`` and ``--model`` before the command."""
    parser.add_argument(
        "--db", metavar="FILE", help=f"the session store (default: $AGENTRIO_DB, else {DEFAULT_DB})"
    )
    parser.add_argument(
        "--model", metavar="MODEL", help="provider:model, e.g. openai:gpt-4.1 (default: $AGENTRIO_MODEL)"
    )


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help=f"the session store (default: $AGENTRIO_DB, else {DEFAULT_DB})",
    )


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """The options of a command that runs an agent."""
    providers = ", ".join(f"{name}:…" for name in PROVIDERS)
    parser.add_argument(
        "--model",
        metavar="MODEL",
        default=argparse.SUPPRESS,
        help=f"the model: {providers} (default: $AGENTRIO_MODEL, else agentrio.toml)",
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
        choices=PERMISSIONS,
        default=argparse.SUPPRESS,
        help="ask before side effects (default), allow everything, or refuse side effects",
    )
    add_sandbox_option(parser, default=argparse.SUPPRESS)
    parser.add_argument(
        "--session", metavar="ID", default=argparse.SUPPRESS, help="continue the stored session ID"
    )
    add_db_option(parser)
    parser.add_argument(
        "--tools",
        choices=TOOLS,
        default=argparse.SUPPRESS,
        help="coding: read, write, edit, ls, grep, glob, bash in --cwd (default); none: no tools",
    )
    parser.add_argument(
        "--max-turns", type=int, metavar="N", default=argparse.SUPPRESS, help="at most N model requests a run"
    )


def add_sandbox_option(parser: argparse.ArgumentParser, default: Any = None) -> None:
    parser.add_argument(
        "--sandbox",
        choices=SANDBOXES,
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
    if choice is not None and choice not in SANDBOXES:
        raise CommandError(f"sandbox must be one of {', '.join(SANDBOXES)}, got {choice!r}")
    if choice == "off":
        return None, "sandbox off: commands run with all your rights"
    backend = Sandbox.backend()
    if backend is None:
        if choice is not None:
            raise CommandError(f"--sandbox {choice}: no sandbox mechanism works here (install bubblewrap)")
        return None, "warning: no sandbox here (install bubblewrap): commands run with all your rights"
    mode = choice or ("read-only" if permission == "read-only" else "workspace-write")
    return Sandbox(mode), f"sandbox {mode} ({backend}, no network; --sandbox off lifts it)"


def _read_config(directory: Path) -> dict[str, Any]:
    path = directory / CONFIG_FILE
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CommandError(f"{path}: {exc}") from None


def _sources(args: argparse.Namespace, environ: Any) -> Callable[..., Any]:
    """``value(name, default)``: from the command line, else the environment,
    else the config file, else ``default``."""
    config = _read_config(Path.cwd())
    unknown = set(config) - set(CONFIG_KEYS)
    if unknown:
        raise CommandError(
            f"{CONFIG_FILE}: unknown setting {min(unknown)!r}; known: {', '.join(CONFIG_KEYS)}"
        )
    for key, setting in config.items():
        expected = CONFIG_TYPES[key]
        if not isinstance(setting, expected) or isinstance(setting, bool):
            kind = "a string" if expected is str else "a whole number"
            raise CommandError(f"{CONFIG_FILE}: {key} must be {kind}, got {setting!r}")

    def value(name: str, default: Any = None) -> Any:
        given = getattr(args, name, None)
        if given is not None:
            return given
        variable = ENVIRONMENT.get(name)
        if variable and environ.get(variable):
            return environ[variable]
        return config.get(name, default)

    return value


def db_path(args: argparse.Namespace, environ: Any = os.environ) -> str:
    """The store's file: ``--db``, else ``$AGENTRIO_DB``, else agentrio.toml, else agentrio.db."""
    return str(_sources(args, environ)("db", DEFAULT_DB))


@attrs.frozen
class Settings:
    """What an agent command runs with, resolved from every source."""

    model_name: str | None
    base_url: str | None
    cwd: Path
    permission: str
    session: str | None
    db: str
    tools: str = "coding"
    max_turns: int | None = None
    system_prompt: str | None = None
    #: The sandbox asked for; None: the default (``resolve_sandbox``).
    sandbox: str | None = None

    @classmethod
    def load(cls, args: argparse.Namespace, environ: Any = os.environ) -> Settings:
        value = _sources(args, environ)
        permission = value("permission", "ask")
        if permission not in PERMISSIONS:
            raise CommandError(f"permission must be one of {', '.join(PERMISSIONS)}, got {permission!r}")
        tools = value("tools", "coding")
        if tools not in TOOLS:
            raise CommandError(f"tools must be one of {', '.join(TOOLS)}, got {tools!r}")
        cwd = Path(value("cwd", ".")).expanduser().resolve()
        if not cwd.is_dir():
            raise CommandError(f"--cwd {cwd}: not a directory")
        max_turns = value("max_turns")
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise CommandError(f"max_turns must be a positive whole number, got {max_turns!r}")
        return cls(
            model_name=value("model"),
            base_url=value("base_url"),
            cwd=cwd,
            permission=permission,
            session=value("session"),
            db=value("db", DEFAULT_DB),
            tools=tools,
            max_turns=max_turns,
            system_prompt=value("system_prompt"),
            sandbox=value("sandbox"),
        )

    def model(self) -> Any:
        """The model adapter; a missing model or API key is a ``CommandError``."""
        if not self.model_name:
            raise CommandError(
                f'no model: give --model provider:model, set $AGENTRIO_MODEL, or put model = "…" in {CONFIG_FILE}'
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


def permission_policy(permission: str) -> Policy:
    """The named preset (``tools.permissions.PRESETS``)."""
    return PRESETS[permission]
