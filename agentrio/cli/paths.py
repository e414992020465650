"""Where the command line keeps its files: the user's data and config directories (XDG)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """agentrio's folder in ``$XDG_DATA_HOME``, else ``~/.local/share``."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "agentrio"


def config_dir() -> Path:
    """agentrio's folder in ``$XDG_CONFIG_HOME``, else ``~/.config``."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "agentrio"


def default_db() -> Path:
    """The store every command uses unless told otherwise (``config``)."""
    return data_dir() / "sessions.db"


def history_file() -> Path:
    """What ``agentrio chat`` was sent, for ↑ and Ctrl-R in the next chat."""
    return data_dir() / "history"
