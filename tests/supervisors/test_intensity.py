"""Restart intensity: N restarts within the window are allowed, one more
escalates; nested supervisors escalate to their parent."""

import pytest
import trio

from agentrio.supervisors import (
    ChildExit,
    ChildRestart,
    ChildSpec,
    Escalation,
    Supervisor,
    SupervisorEscalation,
    one_for_one,
)

from .conftest import Boom


async def test_max_restarts_within_the_window_then_the_next_failure_escalates(
    workers, events, autojump_clock
):
    reached_the_end = False
    with pytest.raises(SupervisorEscalation) as raised:
        async with Supervisor(max_restarts=3, within=10, on_event=events.append, name="sup") as sup:
            await sup.start_child(workers.spec("a"))
            await sup.start_child(workers.spec("b"))
            for _ in range(3):
                await workers.fail("b")
                await trio.sleep(1)
            assert sup.children == ("a", "b")
            mark = len(workers.log)
            await workers.fail("b")  # the fourth in 10 s
            await trio.sleep_forever()  # cancelled by the escalation
        reached_the_end = True
    assert not reached_the_end
    # Every child is stopped before the escalation leaves the block.
    assert workers.since(mark) == [("fail", "b"), ("stop", "a")]
    escalation = raised.value
    assert (escalation.supervisor, escalation.child_id) == ("sup", "b")
    assert isinstance(escalation.__cause__, Boom)
    assert (
        str(escalation)
        == "supervisor 'sup' gave up: child 'b' failed (Boom: b failed) after 3 restarts within 10 s"
    )
    assert [type(e) for e in events] == [ChildRestart] * 3 + [Escalation]
    assert [e.restarts for e in events[:3]] == [1, 2, 3]
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert events[-1] == escalation.event
    assert (events[-1].child_id, events[-1].error, events[-1].max_restarts, events[-1].within) == (
        "b",
        "Boom: b failed",
        3,
        10,
    )


async def test_restarts_spread_beyond_the_window_do_not_count(workers, events, autojump_clock):
    async with Supervisor(max_restarts=2, within=5, on_event=events.append) as sup:
        await sup.start_child(workers.spec("a"))
        for _ in range(10):
            await workers.fail("a")
            await trio.sleep(2.5)  # two failures per window, never three
    assert [e.restarts for e in events] == [1, 2] + [2] * 8


async def test_a_restart_exactly_one_window_later_is_outside_it(workers, events, autojump_clock):
    async with Supervisor(max_restarts=1, within=5, on_event=events.append) as sup:
        await sup.start_child(workers.spec("a"))
        await workers.fail("a")
        await trio.sleep(5)
        await workers.fail("a")
    assert [type(e) for e in events] == [ChildRestart, ChildRestart]


async def test_no_restart_allowed_escalates_at_the_first_failure(workers, events):
    with pytest.raises(SupervisorEscalation):
        async with Supervisor(max_restarts=0, on_event=events.append) as sup:
            await sup.start_child(workers.spec("a"))
            await workers.fail("a")
    assert [type(e) for e in events] == [Escalation]


async def test_a_failed_restart_counts_as_a_restart_and_can_escalate(workers, events):
    with pytest.raises(SupervisorEscalation) as raised:
        async with Supervisor(max_restarts=2, within=10, on_event=events.append) as sup:
            await sup.start_child(workers.spec("a"))
            workers.failing_starts["a"] = 5
            await workers.fail("a")
            await trio.sleep_forever()
    assert [(type(e), e.error) for e in events] == [
        (ChildRestart, "Boom: a failed"),
        (ChildRestart, "Boom: a cannot start"),
        (Escalation, "Boom: a cannot start"),
    ]
    assert str(raised.value.__cause__) == "a cannot start"


async def test_a_child_that_fails_its_restart_once_comes_back(workers, events):
    async with Supervisor(max_restarts=3, on_event=events.append) as sup:
        await sup.start_child(workers.spec("a"))
        workers.failing_starts["a"] = 1
        mark = len(workers.log)
        await workers.fail("a")
        assert workers.since(mark) == [
            ("fail", "a"),
            ("start", "a"),
            ("fail", "a"),
            ("start", "a"),
            ("up", "a"),
        ]
    assert [e.restarts for e in events] == [1, 2]


def inner_supervisor(workers, events, *, max_restarts):
    """A child that is itself a supervisor of one worker, ``w``."""

    async def start(task_status):
        async with Supervisor(max_restarts=max_restarts, on_event=events.append, name="inner") as inner:
            await inner.start_child(workers.spec("w"))
            task_status.started()
            await trio.sleep_forever()

    return ChildSpec("inner", start)


async def test_an_escalation_is_a_failure_of_the_child_the_parent_restarts(workers, events):
    async with Supervisor(one_for_one, max_restarts=1, on_event=events.append, name="outer") as outer:
        await outer.start_child(inner_supervisor(workers, events, max_restarts=1))
        await outer.start_child(workers.spec("sibling"))
        await workers.fail("w")  # the inner supervisor restarts it
        mark = len(workers.log)
        await workers.fail("w")  # the inner supervisor gives up; the outer restarts it
        assert workers.since(mark) == [("fail", "w"), ("start", "w"), ("up", "w")]
    assert [(e.supervisor, e.type, e.child_id) for e in events] == [
        ("inner", "child_restart", "w"),
        ("inner", "escalation", "w"),
        ("outer", "child_restart", "inner"),
    ]
    assert events[-1].error == (
        "SupervisorEscalation: supervisor 'inner' gave up: child 'w' failed (Boom: w failed) "
        "after 1 restarts within 5 s"
    )


async def test_escalations_go_up_the_tree(workers, events):
    with pytest.raises(SupervisorEscalation) as raised:
        async with Supervisor(max_restarts=0, on_event=events.append, name="outer") as outer:
            await outer.start_child(inner_supervisor(workers, events, max_restarts=0))
            await workers.fail("w")
            await trio.sleep_forever()
    assert raised.value.supervisor == "outer"
    inner = raised.value.__cause__
    assert isinstance(inner, SupervisorEscalation) and inner.supervisor == "inner"
    assert isinstance(inner.__cause__, Boom)
    assert [(e.supervisor, e.type) for e in events] == [("inner", "escalation"), ("outer", "escalation")]


async def test_a_normal_exit_of_a_permanent_child_counts_too(workers, events):
    with pytest.raises(SupervisorEscalation, match="child 'a' returned after 1 restarts"):
        async with Supervisor(max_restarts=1, on_event=events.append) as sup:
            await sup.start_child(workers.spec("a", restart="permanent"))
            await workers.finish("a")
            await workers.finish("a")
    assert [(type(e), e.error) for e in events] == [(ChildRestart, None), (Escalation, None)]
    assert not any(isinstance(e, ChildExit) for e in events)
