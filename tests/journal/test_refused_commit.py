"""A store that refuses a commit stops its agents' work at once: in a real
process, a tool's command is stopped within the kill grace, the run ends
``error`` naming the failure, and nothing of ours outlives the process."""

from __future__ import annotations

import sqlite3

from ..tools.processes import assert_all_gone, processes_with, sleepers, unique_duration, wait_for_sleeper
from .processes import read_line, start

GRACE = 1.0  # the child's bash grace


def take_next_records(db, session_id: str, count: int) -> None:
    """Write the session's next records behind its store's back, as a second
    writer that does not claim sessions would."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            query = "SELECT MAX(seq) FROM records WHERE session_id = ?"
            (last,) = conn.execute(query, (session_id,)).fetchone()
            conn.executemany(
                "INSERT INTO records VALUES (?, ?, 'message', 0, '{}', 0)",
                [(session_id, seq) for seq in range(last + 1, last + 1 + count)],
            )
    finally:
        conn.close()


async def test_a_commit_refused_while_a_command_runs_stops_it_and_ends_the_run_in_error(db, tmp_path):
    marker = unique_duration()
    stderr = tmp_path / "child.stderr"
    child = await start("tests.journal.refused_child", db, tmp_path, marker, stderr=stderr)
    try:
        assert await read_line(child, stderr) == "RUNNING"
        await wait_for_sleeper(marker)
        # The call was journaled as started before the command ran.
        take_next_records(db, "s1", 50)
        await child.stdin.send_all(b"steer\n")
        refused = await read_line(child, stderr)
        assert refused.startswith("REFUSED ") and "a session is written by two stores at once" in refused
        end, stop_reason, elapsed, error = (await read_line(child, stderr)).split(" ", 3)
        # Stopped at once: the store's failure cancelled the run, and with it
        # the command (SIGTERM; nothing waited for it to end on its own).
        assert (end, stop_reason) == ("END", "error")
        assert float(elapsed) < GRACE + 1.0
        assert error.startswith("StoreError: SQLiteStore(") and "failed: nothing more is written" in error, (
            error
        )
        assert sleepers(marker) == []
        assert await child.wait() == 0, stderr.read_text()
    finally:
        child.kill()
        await child.wait()
    assert_all_gone(processes_with(marker))
