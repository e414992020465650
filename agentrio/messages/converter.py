"""The package's cattrs converter: the one JSON boundary for every value.

Unions of attrs classes are tagged: each member names itself through a class
variable (``type`` for parts, events and journal records, ``role`` for
messages), and that tag is written even when a member is unstructured on its
own, so ``converter.structure(converter.unstructure(x), Union)`` round-trips.
"""

from __future__ import annotations

import typing
from typing import Any

import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn

from .messages import Message
from .parts import Part

converter = cattrs.Converter()


def register_tagged_union(union: Any, tag: str) -> None:
    """Teach ``converter`` to (un)structure ``union`` by the ``tag`` class variable.

    The union's own hook is registered first, so a member may contain the
    union itself (an event wrapping an event).
    """
    members: dict[str, type] = {}
    structure_fns: dict[str, Any] = {}

    def structure(data: Any, _: Any) -> Any:
        try:
            name = data[tag]
        except (TypeError, KeyError):
            raise ValueError(f"expected an object with a {tag!r} field, got {data!r}") from None
        try:
            cls = members[name]
        except KeyError:
            raise ValueError(f"unknown {tag} {name!r}; expected one of {sorted(members)}") from None
        return structure_fns[name](data, cls)

    converter.register_structure_hook(union, structure)
    converter.register_structure_hook(
        union | None, lambda data, _: None if data is None else structure(data, union)
    )
    for cls in typing.get_args(union):
        name = getattr(cls, tag)
        if name in members:
            raise TypeError(f"{cls.__name__} and {members[name].__name__} share the tag {name!r}")
        members[name] = cls
        untagged = make_dict_unstructure_fn(cls, converter)
        converter.register_unstructure_hook(
            cls, lambda obj, untagged=untagged, name=name: {tag: name, **untagged(obj)}
        )
    for name, cls in members.items():
        structure_fns[name] = make_dict_structure_fn(cls, converter)


def _structure_user_content(data: Any, _: Any) -> str | list[Part]:
    if isinstance(data, str):
        return data
    return converter.structure(data, list[Part])


register_tagged_union(Part, "type")
converter.register_structure_hook(str | list[Part], _structure_user_content)
register_tagged_union(Message, "role")
