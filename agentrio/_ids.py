"""Identifiers."""

import os


def new_id(prefix: str) -> str:
    """A short random identifier such as ``in_3f9a1c0b2d4e``."""
    return f"{prefix}_{os.urandom(6).hex()}"
