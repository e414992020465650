"""The workspace root the coding tools act in.

Every path a model gives is resolved inside the root, symlinks included, and
anything that would land outside is refused. This guards against mistakes
and confused models; it is not a sandbox (``bash`` runs whatever it is given,
and a link swapped between the check and the use is not caught).
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from .common import ToolInputError


def _real_root(root: str | os.PathLike[str]) -> Path:
    real = Path(os.path.realpath(root))
    if not real.is_dir():
        raise ValueError(f"workspace root {root} is not a directory")
    return real


@attrs.frozen
class Workspace:
    """A directory that tools may read and change, and nothing outside it."""

    root: Path = attrs.field(converter=_real_root)

    @classmethod
    def of(cls, root: Workspace | str | os.PathLike[str]) -> Workspace:
        return root if isinstance(root, Workspace) else cls(root)

    def resolve(self, path: str) -> Path:
        """The real location of ``path`` (relative to the root, or absolute
        inside it), after following every symlink. Raises ``ToolInputError``
        when that location is outside the root."""
        if "\0" in path:
            raise ToolInputError(f"path {path!r} contains a NUL character")
        real = Path(os.path.realpath(self.root / path))
        if not self._holds(real):
            raise ToolInputError(
                f"path {path!r} resolves to {real}, which is outside the workspace {self.root}; "
                "only paths inside the workspace can be used"
            )
        return real

    def existing(self, path: str) -> Path:
        """``resolve(path)``, refusing a path where nothing exists."""
        real = self.resolve(path)
        if not real.exists():
            raise ToolInputError(f"{path} does not exist in the workspace")
        return real

    def contains(self, path: Path) -> bool:
        """Whether ``path``, with its symlinks followed, stays inside the root."""
        return self._holds(Path(os.path.realpath(path)))

    def _holds(self, real: Path) -> bool:
        return real == self.root or self.root in real.parents

    def show(self, path: Path) -> str:
        """How a path inside the workspace is written for the model: relative
        to the root, with forward slashes."""
        return path.relative_to(self.root).as_posix()
