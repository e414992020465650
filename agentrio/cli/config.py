"""Where a command's settings come from, in layers; each wins over the ones before it.

1. the default;
2. the user's file, ``config.toml`` in ``$XDG_CONFIG_HOME/agentrio`` (else ``~/.config/agentrio``);
3. the project's file, the ``agentrio.toml`` nearest the working directory
   (in it, or in the first of its parents that has one);
4. the environment (``AGENTRIO_MODEL``, ``AGENTRIO_DB``);
5. the command line.

A path a file sets (``db``, ``cwd``) is relative to that file's folder. Every
command reads the same layers (``agentrio config`` shows the result and where
each value came from), so ``run``, ``chat``, ``sessions``, ``acp`` and
``serve`` use one store unless told otherwise: ``sessions.db`` in the user's
data directory. A file with an unknown setting or a value of the wrong type
is a usage error.
"""

from __future__ import annotations

import argparse
import os
import textwrap
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from . import CommandParsers
from .errors import USAGE, CommandError
from .paths import config_dir, default_db

PROJECT_FILE = "agentrio.toml"
USER_FILE = "config.toml"
#: What a config file may set, and the type of each.
TYPES: dict[str, type] = {
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
KEYS = tuple(TYPES)
#: Settings that are paths: relative to the file that sets them.
PATHS = ("db", "cwd")
#: setting -> environment variable
ENVIRONMENT = {"model": "AGENTRIO_MODEL", "db": "AGENTRIO_DB"}
#: Settings with a default other than None.
DEFAULTS: dict[str, Any] = {"permission": "ask", "tools": "coding", "cwd": "."}


@attrs.frozen
class Value:
    value: Any
    #: Where it came from: ``--model``, ``$AGENTRIO_MODEL``, a file's path, or ``default``.
    origin: str


def user_file() -> Path:
    return config_dir() / USER_FILE


def project_file(start: Path) -> Path | None:
    """The ``agentrio.toml`` in ``start`` or the nearest of its parents."""
    for folder in (start, *start.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def read_file(path: Path) -> dict[str, Any]:
    """A config file's settings, checked; paths made absolute. A missing file sets nothing."""
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CommandError(f"{path}: {exc}", status=USAGE) from None
    unknown = set(data) - set(KEYS)
    if unknown:
        raise CommandError(
            f"{path}: unknown setting {min(unknown)!r}; known: {', '.join(KEYS)}", status=USAGE
        )
    for key, setting in data.items():
        expected = TYPES[key]
        if not isinstance(setting, expected) or isinstance(setting, bool):
            kind = "a string" if expected is str else "a whole number"
            raise CommandError(f"{path}: {key} must be {kind}, got {setting!r}", status=USAGE)
        if key in PATHS and isinstance(setting, str):
            data[key] = str(path.parent / Path(setting).expanduser())
    return data


@attrs.frozen
class Config:
    """The settings of one command, each with its origin."""

    values: dict[str, Value]

    @classmethod
    def load(
        cls,
        args: argparse.Namespace | None = None,
        environ: Mapping[str, str] = os.environ,
        cwd: Path | None = None,
    ) -> Config:
        values = {key: Value(DEFAULTS.get(key), "default") for key in KEYS}
        values["db"] = Value(str(default_db()), "default")
        project = project_file((cwd or Path.cwd()).resolve())
        for path in (user_file(), project):
            if path is not None:
                values.update({key: Value(value, str(path)) for key, value in read_file(path).items()})
        for key, variable in ENVIRONMENT.items():
            if environ.get(variable):
                values[key] = Value(environ[variable], f"${variable}")
        for key in KEYS:
            given = getattr(args, key, None)
            if given is not None:
                values[key] = Value(given, "--" + key.replace("_", "-"))
        return cls(values)

    def __getitem__(self, key: str) -> Any:
        return self.values[key].value

    def lines(self) -> list[str]:
        """``key = value  (origin)``, one line a setting, for ``agentrio config``."""
        width = max(map(len, KEYS))
        shown = {
            key: "-" if v.value is None else textwrap.shorten(str(v.value), 60, placeholder="…")
            for key, v in self.values.items()
        }
        return [f"{key:<{width}} = {shown[key]}  ({v.origin})" for key, v in self.values.items()]


def register(subparsers: CommandParsers) -> None:
    parser = subparsers.add_parser(
        "config",
        description=__doc__.replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--db", metavar="FILE", default=argparse.SUPPRESS, help="as the other commands take it"
    )
    parser.set_defaults(handler=_show)


def _show(args: argparse.Namespace) -> int:
    print(f"files: {user_file()}, {project_file(Path.cwd().resolve()) or f'no {PROJECT_FILE} here or above'}")
    for line in Config.load(args).lines():
        print(line)
    return 0
