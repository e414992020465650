"""Each strategy restarts the right children, in the right order."""

import pytest
import trio

from agentrio.supervisors import ChildRestart, Supervisor, one_for_all, one_for_one, rest_for_one


async def start_abc(sup, workers):
    for child_id in "abc":
        await sup.start_child(workers.spec(child_id))
    return len(workers.log)


async def test_one_for_one_restarts_only_the_failed_child(workers, events):
    async with Supervisor(one_for_one, on_event=events.append) as sup:
        mark = await start_abc(sup, workers)
        await workers.fail("b")
        assert workers.since(mark) == [("fail", "b"), ("start", "b"), ("up", "b")]
        assert sup.children == ("a", "b", "c")
    assert [(e.child_id, e.restarting, e.error) for e in events] == [("b", ["b"], "Boom: b failed")]


async def test_one_for_all_stops_the_others_newest_first_then_starts_all_in_order(workers, events):
    async with Supervisor(one_for_all, on_event=events.append) as sup:
        mark = await start_abc(sup, workers)
        await workers.fail("b")
        assert workers.since(mark) == [
            ("fail", "b"),
            ("stop", "c"),
            ("stop", "a"),
            ("start", "a"),
            ("up", "a"),
            ("start", "b"),
            ("up", "b"),
            ("start", "c"),
            ("up", "c"),
        ]
        assert sup.children == ("a", "b", "c")
    assert [(e.child_id, e.restarting) for e in events] == [("b", ["a", "b", "c"])]


async def test_rest_for_one_restarts_the_failed_child_and_those_started_after_it(workers, events):
    async with Supervisor(rest_for_one, on_event=events.append) as sup:
        mark = await start_abc(sup, workers)
        await workers.fail("b")
        assert workers.since(mark) == [
            ("fail", "b"),
            ("stop", "c"),
            ("start", "b"),
            ("up", "b"),
            ("start", "c"),
            ("up", "c"),
        ]
        mark = len(workers.log)
        await workers.fail("c")  # the newest: nothing after it
        assert workers.since(mark) == [("fail", "c"), ("start", "c"), ("up", "c")]
    assert [(e.child_id, e.restarting) for e in events] == [("b", ["b", "c"]), ("c", ["c"])]


@pytest.mark.parametrize("strategy", [one_for_all, rest_for_one])
async def test_a_restarted_child_is_up_before_the_next_one_starts(workers, strategy, autojump_clock):
    workers.startup = 1.0
    async with Supervisor(strategy) as sup:
        mark = await start_abc(sup, workers)
        await workers.fail("a")
        await trio.sleep(10)  # the restarts take 3 s
        restarted = [entry for entry in workers.since(mark) if entry[0] in ("start", "up")]
        assert restarted == [
            ("start", "a"),
            ("up", "a"),
            ("start", "b"),
            ("up", "b"),
            ("start", "c"),
            ("up", "c"),
        ]


async def test_a_temporary_sibling_is_stopped_and_not_restarted(workers, events):
    async with Supervisor(one_for_all, on_event=events.append) as sup:
        await sup.start_child(workers.spec("a"))
        await sup.start_child(workers.spec("t", restart="temporary"))
        mark = len(workers.log)
        await workers.fail("a")
        assert workers.since(mark) == [("fail", "a"), ("stop", "t"), ("start", "a"), ("up", "a")]
        assert sup.children == ("a",)
    assert events == [
        ChildRestart(
            supervisor=sup.name,
            seq=1,
            time=events[0].time,
            child_id="a",
            error="Boom: a failed",
            restarting=["a"],
            restarts=1,
        )
    ]
