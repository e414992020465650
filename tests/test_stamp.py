"""The bus builds events through ``stamper``: the same events as the
classes' own constructors, and the same refusals."""

import typing

import attrs
import pytest

from agentrio.actors.stamp import stamper
from agentrio.events import Event

EVENT_TYPES = typing.get_args(Event)
STAMPS = ("agent_id", "session_id", "seq", "time")


def _own(event_type):
    return [f for f in attrs.fields(event_type) if f.name not in STAMPS]


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=lambda t: t.__name__)
def test_a_stamped_event_equals_the_constructed_one(event_type):
    own = _own(event_type)
    required = {f.name: f"{f.name}-value" for f in own if f.default is attrs.NOTHING}
    every = {f.name: f"{f.name}-value" for f in own}
    for fields in (required, every):
        stamped = stamper(event_type)("a1", "s1", 7, 1.5, dict(fields))
        built = event_type(agent_id="a1", session_id="s1", seq=7, time=1.5, **fields)
        assert type(stamped) is event_type and stamped == built
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            stamped.seq = 8


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=lambda t: t.__name__)
def test_fields_the_constructor_refuses_are_refused_alike(event_type):
    own = _own(event_type)
    required = {f.name: 1 for f in own if f.default is attrs.NOTHING}
    optional = [f.name for f in own if f.default is not attrs.NOTHING]
    wrong = [{**required, "no_such_field": 1}]
    if required:
        wrong.append(dict(list(required.items())[1:]))  # one missing
        if optional:  # one missing, one unknown: as many fields as expected
            wrong.append({**dict(list(required.items())[1:]), "no_such_field": 1})
    for fields in wrong:
        with pytest.raises(TypeError) as expected:
            event_type(agent_id="a", session_id="s", seq=1, time=0.0, **fields)
        with pytest.raises(TypeError) as refused:
            stamper(event_type)("a", "s", 1, 0.0, fields)
        assert str(refused.value) == str(expected.value)


def test_a_factory_default_is_made_fresh_for_each_event():
    from agentrio.events import CompactionEnd

    fields = {"reason": "manual", "tokens_before": 1, "tokens_after": 1}
    first = stamper(CompactionEnd)("a", "s", 1, 0.0, dict(fields))
    second = stamper(CompactionEnd)("a", "s", 2, 0.0, dict(fields))
    assert first.usage == second.usage and first.usage is not second.usage
