"""WorkerHost: the nursery an agent's tool workers run in."""

import trio
import trio.testing

from agentrio.actors.workers import WorkerHost


async def _record(log: list, name: str, wait: bool = False) -> None:
    log.append(f"{name} started")
    try:
        if wait:
            await trio.sleep_forever()
        await trio.lowlevel.checkpoint()
        log.append(f"{name} done")
    except trio.Cancelled:
        log.append(f"{name} cancelled")
        raise


async def test_workers_given_before_the_host_runs_start_when_it_does():
    log: list[str] = []
    host = WorkerHost()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(host.run)
        host.start(_record, log, "a")  # the host's task has not run yet
        host.start(_record, log, "b")
        await trio.testing.wait_all_tasks_blocked()
        host.start(_record, log, "c")  # straight into its open nursery
        await trio.testing.wait_all_tasks_blocked()
        # (Trio runs the tasks of one batch in either order.)
        assert sorted(log[:4]) == ["a done", "a started", "b done", "b started"]
        assert log[4:] == ["c started", "c done"]
        host.cancel()
    assert host.cancelled


async def test_a_cancel_before_the_host_runs_still_runs_its_workers_cancelled():
    log: list[str] = []
    host = WorkerHost()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(host.run)
        host.start(_record, log, "a")
        host.cancel()
    # Started, so its finally ran; cancelled at its first checkpoint.
    assert log == ["a started", "a cancelled"]


async def test_a_cancelled_host_ends_with_its_last_worker_and_not_before():
    log: list[str] = []
    host = WorkerHost()
    release = trio.Event()

    async def stubborn() -> None:
        log.append("stubborn started")
        with trio.CancelScope(shield=True):  # ignores the cancel, like a thread blocked in C
            await release.wait()
        log.append("stubborn done")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(host.run)
        host.start(stubborn)
        host.start(_record, log, "waiting", True)
        await trio.testing.wait_all_tasks_blocked()
        host.cancel()
        await trio.testing.wait_all_tasks_blocked()
        try:
            assert sorted(log) == ["stubborn started", "waiting cancelled", "waiting started"]
            # The host's task still supervises the stubborn worker.
            assert len(nursery.child_tasks) == 1
        finally:
            release.set()
    assert log[-1] == "stubborn done"
