"""``--output-schema FILE``: a run that must end with JSON fitting a JSON Schema.

The schema is read and checked before any request: a missing or unreadable
file, text that is not JSON, a schema that is not valid JSON Schema (checked
against its meta-schema), one whose ``$ref`` points outside it, or one the
chosen provider refuses is one line on stderr and exit code
``UNUSABLE_SCHEMA``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..models import OutputSpec
from ..models.sse_model import SSEModel
from .errors import CommandError

#: The exit code of an ``--output-schema`` that cannot be used.
UNUSABLE_SCHEMA = 6


def add_output_schema_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output-schema",
        metavar="FILE",
        help="a JSON Schema the answer must fit; its JSON is printed on stdout (see exit codes)",
    )


def _refuse(path: str, problem: str) -> CommandError:
    return CommandError(f"--output-schema {path}: {problem}", status=UNUSABLE_SCHEMA)


def read_output_schema(path: str, model: SSEModel) -> OutputSpec:
    """The output asked for by the schema in ``path``, which ``model``'s provider takes."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _refuse(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _refuse(path, f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise _refuse(path, f"not JSON: {exc}") from None
    try:
        output = OutputSpec.for_schema(schema)
    except ValueError as exc:
        raise _refuse(path, " ".join(str(exc).split())) from None
    if problem := model.output_problem(output):
        raise _refuse(path, problem)
    return output
