"""Several processes sharing one store, each writing its own session."""

from __future__ import annotations

from agentrio import AgentSpec, Runtime, ScriptedModel

from .processes import read_line, start

TURNS = 40


async def test_two_processes_write_their_sessions_to_one_store(new_store, tmp_path):
    sessions = ["left", "right"]
    children = []
    for session_id in sessions:
        stderr = tmp_path / f"{session_id}.stderr"
        children.append(
            (
                await start(
                    "tests.journal.writer_child",
                    new_store.kind,
                    new_store.location,
                    session_id,
                    TURNS,
                    stderr=stderr,
                ),
                stderr,
            )
        )
    # Both have the store open before either writes.
    for process, stderr in children:
        assert await read_line(process, stderr) == "OPEN"
    for process, _ in children:
        await process.stdin.send_all(b"go\n")
    for process, stderr in children:
        assert await read_line(process, stderr) == "DONE"
        assert await process.wait() == 0

    if new_store.kind == "sqlite":
        assert new_store.execute("PRAGMA integrity_check") == [("ok",)]
    async with Runtime(new_store()) as rt:
        assert sorted(info.session_id for info in await rt.store.list_sessions()) == sessions
        for session_id in sessions:
            agent = await rt.create(AgentSpec("a", ScriptedModel([])), session_id)
            expected = []
            for turn in range(TURNS):
                expected += [f"turn {turn}", "", f"echo: {session_id} {turn}", f"{session_id} done {turn}"]
            assert [m.text for m in agent.messages] == expected
