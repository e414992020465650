"""Building an agent's events on the bus's hot path.

An agent emits about sixty events a turn, and while anyone subscribes each
is built. Through its attrs ``__init__`` a frozen, keyword-only event costs
a keyword match per field and a generic ``object.__setattr__`` per field:
about 40% more than the same class unfrozen. ``stamper`` compiles, once per
event class, a constructor that sets each slot through its descriptor, which
is where the generic path ends anyway, so events stay frozen values and cost
what unfrozen ones do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ..events import Event

#: ``(agent_id, session_id, seq, time, fields) -> event``.
Stamper = Callable[[str, str, int, float, dict[str, Any]], Event]

#: attrs' ``Factory`` class (its stubs declare a function).
_FACTORY: type[Any] = attrs.Factory  # type: ignore[assignment]

_STAMPS = ("agent_id", "session_id", "seq", "time")


class _Stampers(dict[type[Event], Stamper]):
    """The stamper of each event class, compiled at its first lookup."""

    def __missing__(self, event_type: type[Event]) -> Stamper:
        made = self[event_type] = _compile(event_type)
        return made


#: ``STAMPERS[event_type]`` is ``stamper(event_type)``: one dict lookup, which
#: is what the bus does for every event it builds.
STAMPERS: dict[type, Stamper] = _Stampers()


def stamper(event_type: type[Event]) -> Stamper:
    """The constructor of ``event_type`` that the bus uses: the stamp fields
    positionally, the event's own fields as a dict of keywords. It builds an
    event equal to ``event_type(agent_id=..., session_id=..., seq=...,
    time=..., **fields)``; given fields that call would refuse, it makes that
    call, which raises attrs' own ``TypeError``."""
    return STAMPERS[event_type]


def _compile(event_type: type[Event]) -> Stamper:
    fields = attrs.fields(event_type)
    if any(f.validator or f.converter or f.on_setattr or f.alias != f.name or not f.init for f in fields):
        return _by_init(event_type)  # what only __init__ knows how to do
    scope: dict[str, Any] = {"new": object.__new__, "cls": event_type, "by_init": _by_init(event_type)}
    own = [f for f in fields if f.name not in _STAMPS]
    required = [f for f in own if f.default is attrs.NOTHING]
    optional = [f for f in own if f.default is not attrs.NOTHING]
    lines = [f"def stamp({', '.join(_STAMPS)}, fields):"]
    counted = " + ".join([str(len(required)), *(f"({f.name!r} in fields)" for f in optional)])
    lines.append(f"    if len(fields) != {counted}:")
    lines.append(f"        return by_init({', '.join(_STAMPS)}, fields)")
    lines.append("    self = new(cls)")
    lines.append("    try:")
    for f in fields:
        owner = next(c for c in event_type.__mro__ if f.name in vars(c))
        scope[f"set_{f.name}"] = vars(owner)[f.name].__set__
        if f.name in _STAMPS:
            value = f.name
        elif f.default is attrs.NOTHING:
            value = f"fields[{f.name!r}]"
        elif isinstance(f.default, _FACTORY) and not f.default.takes_self:
            scope[f"make_{f.name}"] = f.default.factory
            value = f"fields[{f.name!r}] if {f.name!r} in fields else make_{f.name}()"
        elif isinstance(f.default, _FACTORY):
            return _by_init(event_type)
        else:
            scope[f"default_{f.name}"] = f.default
            value = f"fields.get({f.name!r}, default_{f.name})"
        lines.append(f"        set_{f.name}(self, {value})")
    lines.append("    except KeyError:")
    lines.append(f"        return by_init({', '.join(_STAMPS)}, fields)")
    lines.append("    return self")
    exec("\n".join(lines), scope)  # noqa: S102 - built from the class's own field names
    stamp: Stamper = scope["stamp"]
    return stamp


def _by_init(event_type: type[Event]) -> Stamper:
    def stamp(agent_id: str, session_id: str, seq: int, time: float, fields: dict[str, Any]) -> Event:
        return event_type(agent_id=agent_id, session_id=session_id, seq=seq, time=time, **fields)

    return stamp
