"""Starting children, their restart policies, leaving the block, events."""

import pytest
import trio

from agentrio.messages import converter
from agentrio.supervisors import (
    ChildExit,
    ChildRestart,
    ChildSpec,
    Escalation,
    Supervisor,
    SupervisorEscalation,
    SupervisorEvent,
    one_for_all,
)

from .conftest import Boom


def all_tasks() -> set[trio.lowlevel.Task]:
    tasks, nurseries = set(), list(trio.lowlevel.current_root_task().child_nurseries)
    while nurseries:
        for task in nurseries.pop().child_tasks:
            tasks.add(task)
            nurseries.extend(task.child_nurseries)
    return tasks


@pytest.fixture
async def assert_nothing_runs():
    """``assert_nothing_runs()``: no task started since the test began is left."""
    before = all_tasks()

    def check() -> None:
        assert all_tasks() - before == set()

    return check


async def test_start_child_returns_once_the_child_is_up_with_its_value(workers):
    async with Supervisor() as sup:
        assert await sup.start_child(workers.spec("a")) == "a is up"
        assert workers.log == [("start", "a"), ("up", "a")]
        assert sup.children == ("a",)


async def test_a_child_failing_to_start_is_not_kept_and_its_error_reaches_the_caller(workers, events):
    workers.failing_starts["a"] = 1
    async with Supervisor(on_event=events.append) as sup:
        with pytest.raises(Boom, match="a cannot start"):
            await sup.start_child(workers.spec("a"))
        assert sup.children == ()
    assert events == []


async def test_child_ids_are_unique(workers):
    async with Supervisor() as sup:
        await sup.start_child(workers.spec("a"))
        with pytest.raises(ValueError, match="already has a child 'a'"):
            await sup.start_child(workers.spec("a"))


def test_restart_policies_are_checked():
    with pytest.raises(ValueError):
        ChildSpec("a", trio.sleep_forever, restart="sometimes")


@pytest.mark.parametrize(
    ("restart", "how", "error"),
    [
        ("transient", "finish", None),
        ("temporary", "finish", None),
        ("temporary", "fail", "Boom: a failed"),
    ],
)
async def test_a_child_its_policy_does_not_restart_leaves(workers, events, restart, how, error):
    async with Supervisor(on_event=events.append) as sup:
        await sup.start_child(workers.spec("a", restart=restart))
        await sup.start_child(workers.spec("b"))
        mark = len(workers.log)
        await getattr(workers, how)("a")
        assert workers.since(mark) == [(how.replace("finish", "return"), "a")]
        assert sup.children == ("b",)
        await sup.start_child(workers.spec("a"))  # its id is free again
    assert [(type(e), e.child_id, e.error) for e in events] == [(ChildExit, "a", error)]


async def test_a_permanent_child_is_restarted_after_a_normal_return(workers, events):
    async with Supervisor(on_event=events.append) as sup:
        await sup.start_child(workers.spec("a", restart="permanent"))
        await workers.finish("a")
        assert workers.log[-2:] == [("start", "a"), ("up", "a")]
    assert [(type(e), e.error) for e in events] == [(ChildRestart, None)]


async def test_leaving_the_block_stops_every_child_newest_first(assert_nothing_runs, workers):
    async with Supervisor() as sup:
        for child_id in "abc":
            await sup.start_child(workers.spec(child_id))
        mark = len(workers.log)
    assert workers.since(mark) == [("stop", "c"), ("stop", "b"), ("stop", "a")]
    assert_nothing_runs()
    with pytest.raises(RuntimeError, match="not open"):
        await sup.start_child(workers.spec("d"))


async def test_a_child_failing_as_it_is_stopped_is_reported(workers, events):
    workers.failing_stops.add("a")
    async with Supervisor(on_event=events.append) as sup:
        await sup.start_child(workers.spec("a"))
        await sup.start_child(workers.spec("b"))
    assert workers.log[-2:] == [("stop", "b"), ("stop", "a")]
    assert [(type(e), e.child_id, e.error) for e in events] == [(ChildExit, "a", "Boom: a failed to stop")]


async def test_a_sibling_failing_as_a_restart_stops_it_is_reported_and_restarted(workers, events):
    workers.failing_stops.add("b")
    async with Supervisor(one_for_all, on_event=events.append) as sup:
        await sup.start_child(workers.spec("a"))
        await sup.start_child(workers.spec("b"))
        await workers.fail("a")
        assert sup.children == ("a", "b")
        assert workers.log[-2:] == [("start", "b"), ("up", "b")]
        workers.failing_stops.clear()
    assert [(type(e), e.child_id, e.error) for e in events] == [
        (ChildRestart, "a", "Boom: a failed"),
        (ChildExit, "b", "Boom: b failed to stop"),
    ]


async def test_a_child_failing_as_the_block_is_left_is_reported_not_restarted(workers, events):
    async with Supervisor(on_event=events.append) as sup:
        await sup.start_child(workers.spec("a"))
        await sup.start_child(workers.spec("b"))
        workers.tell("a", "fail")  # it fails as the supervisor closes
    assert sorted(workers.log[4:]) == [("fail", "a"), ("stop", "b")]
    assert [(type(e), e.child_id, e.error) for e in events] == [(ChildExit, "a", "Boom: a failed")]


async def test_the_blocks_own_exception_leaves_it_as_raised(assert_nothing_runs, workers):
    with pytest.raises(KeyError):
        async with Supervisor() as sup:
            await sup.start_child(workers.spec("a"))
            raise KeyError("mine")
    assert workers.log[-1] == ("stop", "a")
    assert_nothing_runs()


async def test_cancelling_the_owner_stops_everything(assert_nothing_runs, workers, autojump_clock):
    with trio.move_on_after(10) as deadline:
        async with Supervisor() as sup:
            await sup.start_child(workers.spec("a"))
            await sup.start_child(workers.spec("b"))
            await trio.sleep_forever()
    assert deadline.cancelled_caught
    assert sorted(workers.log[-2:]) == [("stop", "a"), ("stop", "b")]
    assert_nothing_runs()


async def test_cancelling_the_owner_during_a_restart_stops_everything(
    assert_nothing_runs, workers, autojump_clock
):
    workers.startup = 5
    with trio.move_on_after(7):  # up at 5 s, restarting from 5 s to 10 s
        async with Supervisor() as sup:
            await sup.start_child(workers.spec("a"))
            await workers.fail("a")
            await trio.sleep_forever()
    assert workers.log == [("start", "a"), ("up", "a"), ("fail", "a"), ("start", "a")]
    assert_nothing_runs()


async def test_after_an_escalation_nothing_runs(assert_nothing_runs, workers):
    with pytest.raises(SupervisorEscalation):
        async with Supervisor(max_restarts=0) as sup:
            await sup.start_child(workers.spec("a"))
            await sup.start_child(workers.spec("b"))
            await workers.fail("b")
    assert workers.log[-1] == ("stop", "a")
    assert_nothing_runs()


def test_a_supervisor_is_entered_once():
    async def main():
        sup = Supervisor()
        async with sup:
            pass
        with pytest.raises(RuntimeError, match="only once"):
            async with sup:
                pass

    trio.run(main)


@pytest.mark.parametrize(
    "event",
    [
        ChildRestart(
            supervisor="s", seq=1, time=0.5, child_id="a", error="Boom: x", restarting=["a", "b"], restarts=1
        ),
        ChildExit(supervisor="s", seq=2, time=1.0, child_id="a", error=None),
        Escalation(
            supervisor="s", seq=3, time=2.0, child_id="a", error="Boom: x", max_restarts=3, within=5.0
        ),
    ],
)
def test_events_round_trip_through_json(event):
    data = converter.unstructure(event)
    assert data["type"] == event.type
    assert converter.structure(data, SupervisorEvent) == event
