"""Input for a session that another runtime holds: posted through the
database, taken by the holder."""

from __future__ import annotations

import json
from typing import Literal

import attrs

from ..messages import UserMessage, converter

RemoteKind = Literal["steer", "followup", "inject", "cancel"]
REMOTE_KINDS: tuple[RemoteKind, ...] = ("steer", "followup", "inject", "cancel")


def _check_message(
    item: RemoteInput, attribute: attrs.Attribute[UserMessage | None], message: UserMessage | None
) -> None:
    if (message is None) != (item.kind == "cancel"):
        raise ValueError(f"a {item.kind} input {'takes no' if item.kind == 'cancel' else 'needs a'} message")


@attrs.frozen
class RemoteInput:
    """What ``send``/``steer``/``followup``/``inject``/``cancel`` asked of a
    session held elsewhere. ``id`` is given by the store that posts it:
    the holder takes inputs in that order."""

    kind: RemoteKind = attrs.field(validator=attrs.validators.in_(REMOTE_KINDS))
    message: UserMessage | None = attrs.field(default=None, validator=_check_message)
    id: int = 0


def inbox_id(input_id: int) -> str:
    """The inbox id a posted input is queued under: the journal says whether
    (and by which turn) it was taken in."""
    return f"remote_{input_id}"


def encode_input(item: RemoteInput) -> str:
    data = converter.unstructure(item)
    del data["id"]  # the database's to give
    return json.dumps(data, separators=(",", ":"))


def decode_input(input_id: int, text: str) -> RemoteInput:
    return converter.structure({**json.loads(text), "id": input_id}, RemoteInput)
