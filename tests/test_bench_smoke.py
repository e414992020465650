"""The benchmarks run: each at its --quick sizes, agentrio only, so that
neither the peers nor any timing is needed; and each installed peer's turn
runs once or twice, untimed. No figure is checked."""

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench(*argv: str, prelude: str = "") -> list[str]:
    """Run ``python bench/...`` from the project root, after ``prelude``;
    return the lines it printed."""
    script = f"{prelude}import runpy, sys; sys.argv = {list(argv)!r}; runpy.run_path(sys.argv[0], run_name='__main__')"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "bench")}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _rows(lines: list[str]) -> list[list[str]]:
    """The cells of every markdown table row but the rules."""
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in lines
        if line.startswith("|") and not line.startswith("|---")
    ]


def test_peers_quick_runs_for_agentrio_alone_and_prints_the_issue_table():
    lines = _bench("bench/peers.py", "--quick", "--frameworks", "agentrio")
    assert "  command: python bench/peers.py --quick --frameworks agentrio" in lines
    header, *rows = _rows(lines)
    assert header == ["", "agentrio"]
    assert [row[0] for row in rows] == [
        "per turn, 10-turn conversation",
        "per turn, last 5 of 20 turns",
        "20 agents, one tool turn each",
    ]
    # Each figure is a median and the range of the runs.
    assert all(re.fullmatch(r"\S+ \S+ \[\S+ \S+–\S+ \S+\]", row[1]) for row in rows)
    assert not any("peer / agentrio" in line for line in lines)


def test_a_peer_that_is_not_installed_is_reported_not_fatal():
    hide = "import sys; sys.modules['pydantic_ai'] = None; "
    lines = _bench("bench/peers.py", "--quick", "--frameworks", "agentrio,pydantic-ai", prelude=hide)
    assert any(line.startswith("  pydantic-ai: not installed") for line in lines)
    assert _rows(lines)[0] == ["", "agentrio"]


def test_loop_overhead_quick_reports_each_turn_and_the_fixed_costs():
    lines = _bench("bench/loop_overhead.py", "--quick")
    assert [row[0] for row in _rows(lines)] == [
        "per turn of a 30-turn conversation, one agent.run each",
        "turn 10",
        "turn 30",
        "fixed and marginal costs (20 runs each)",
        "per parallel call (4 -> 8)",
        "per run (answered at once)",
        "per turn, one subscriber reading every event",
        "per turn, the model yielding between any two stream events",
        "idle agents (tracemalloc)",
        "50",
    ]


def test_scale_quick_reports_idle_running_and_waking_agents():
    lines = _bench("bench/scale.py", "--quick")
    assert [row[0] for row in _rows(lines)] == [
        "idle agents",
        "100",
        "300",
        "running agents, one turn of 4 calls each",
        "10",
        "30",
        "hibernating agents",
        "100",
    ]
    wake = _rows(lines)[-1]
    assert len(wake) == 5 and all(
        "×" in cell for cell in wake[2:]
    )  # the ratios to a creation, a call and a turn


def test_scale_json_rows_give_the_wake_up_against_its_references():
    rows = json.loads(_bench("bench/scale.py", "--quick", "--json")[-1])  # (not every row has a reference)
    wakes = [row for row in rows if "wake-up" in row["name"]]
    assert [row["reference"] for row in wakes] == [
        "a creation",
        "the same call, awake",
        "a one-turn run, awake",
    ]
    assert all(row["ratio"] > 0 and len(row["range"]) == 2 for row in wakes)
    (memory,) = [row for row in rows if row["name"] == "100 idle agents: memory per agent" and row["target"]]
    assert memory["median"] <= 2048


def test_journal_runs_at_small_sizes_and_states_its_targets():
    lines = _bench("bench/journal.py", "--quick")
    assert any(line.startswith("targets: one agent, synchronous=NORMAL") for line in lines)
    assert any("agentrio, 1 agent" in line for line in lines)


def test_journal_restores_from_postgres_too(postgres):
    """(``postgres``: the server binaries are here; the bench starts a
    server of its own.)"""
    lines = _bench("bench/journal.py", "--quick", "--postgres")
    sqlite, pg = (lines.index(line) for line in lines if line.startswith("restore from "))
    assert lines[sqlite].startswith("restore from SQLite:")
    assert lines[pg].startswith("restore from PostgreSQL ")
    assert all("full replay cpu" in line for line in lines[pg + 1 : pg + 3])


@pytest.mark.parametrize("module", ["_pydantic_ai", "_openai_agents", "_langgraph"])
def test_a_peer_streams_two_turns_carrying_its_history(module):
    """Each installed peer's turn: 4 calls, their results and the answer,
    read as a stream; the second run starts from the first one's history,
    and a copied turn has its own call ids."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        peer = pytest.importorskip(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))

    async def two_turns():
        turn = peer.turn(4)
        first = await turn([])
        second = await turn(first)
        return first, second

    first, second = asyncio.run(two_turns())
    assert second[: len(first)] == first
    assert len(second) == 2 * len(first)
    assert [peer.copied(item, 0) for item in first] != first


def test_compare_takes_turns_between_two_checkouts_and_refuses_what_is_not_one(tmp_path):
    lines = _bench(
        "bench/compare.py", str(ROOT), str(ROOT), "--rounds", "1", "--conversations", "1", "--turns", "3"
    )
    assert lines[0] == "per turn of a 3-turn conversation, one subscriber;"
    assert [line.split(":")[0].strip() for line in lines[2:]] == [
        f"old ({ROOT})",
        f"new ({ROOT})",
        "new / old",
    ]
    done = subprocess.run(
        [sys.executable, "bench/compare.py", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2 and "not a checkout of agentrio" in done.stderr


def test_floor_quick_prints_each_program_with_its_ratio_to_the_floor():
    lines = _bench("bench/floor.py", "--quick")
    assert "  command: python bench/floor.py --quick" in lines
    header, *rows = _rows(lines)
    assert header[1:] == ["per turn", "vs floor", "per extra call", "vs floor"]
    assert [row[0] for row in rows] == ["floor", "agentrio, memory", "agentrio, SQLite"]
    assert rows[0][2] == rows[0][4] == "1.00x"
    assert all(re.fullmatch(r"\d+\.\d\dx", row[2]) for row in rows)


def test_a_peer_that_is_not_installed_has_rows_that_say_so_in_json():
    hide = "import sys; sys.modules['pydantic_ai'] = None; "
    lines = _bench(
        "bench/peers.py", "--quick", "--json", "--frameworks", "agentrio,pydantic-ai", prelude=hide
    )
    rows = json.loads(lines[-1])
    assert [(row["ours"], row["median"] is None) for row in rows] == [("agentrio", False)] * 3 + [
        ("pydantic-ai", True)
    ] * 3
    assert all(row["note"].startswith("not installed") for row in rows[3:])


def test_report_writes_its_table_between_the_markers_and_leaves_the_page_alone(tmp_path):
    page = tmp_path / "docs" / "benchmarks.md"
    page.parent.mkdir()
    page.write_text(
        "# Benchmarks\n\nIntro.\n\n<!-- bench:start -->\nold table\n<!-- bench:end -->\n\nOutro.\n"
    )
    lines = _bench("bench/report.py", "--quick", "--only", "floor,stream_scale", "--page", str(page))
    text = page.read_text()
    before, rest = text.split("<!-- bench:start -->\n")
    inside, after = rest.split("<!-- bench:end -->")
    assert before == "# Benchmarks\n\nIntro.\n\n" and after == "\n\nOutro.\n"
    assert "old table" not in inside
    assert inside.strip() == "\n".join(lines).strip()  # the page holds what was printed
    cells = _rows(inside.splitlines())
    assert cells[0] == ["figure", "measured", "median [min–max]", "against", "ratio", "target"]
    memory = next(row for row in cells if row[0].startswith("per turn") and row[1] == "agentrio, memory")
    assert memory[3] == "floor" and re.fullmatch(r"\d+\.\d\d×", memory[4])
    assert re.fullmatch(r"≤ 2×: (met|MISSED)", memory[5])
    # One section a benchmark, the one that may not exist yet too.
    assert [line for line in lines if line.startswith("### ")][:2] == ["### floor", "### stream_scale"]


def test_report_creates_a_missing_page_and_refuses_one_with_broken_markers(tmp_path):
    page = tmp_path / "benchmarks.md"
    _bench("bench/report.py", "--quick", "--only", "instructions", "--page", str(page))
    assert page.read_text().startswith("# Benchmarks\n")
    assert page.read_text().count("<!-- bench:start -->") == 1
    page.write_text("<!-- bench:end -->\nhand-written\n<!-- bench:start -->\n")
    done = subprocess.run(
        [sys.executable, "bench/report.py", "--quick", "--only", "floor", "--page", str(page)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 2 and done.stderr.startswith("report: ") and "Traceback" not in done.stderr
    assert page.read_text() == "<!-- bench:end -->\nhand-written\n<!-- bench:start -->\n"


def _json_rows(*argv: str) -> list[dict]:
    """The rows a benchmark prints with ``--json`` (what bench/report.py collects)."""
    (text,) = ["\n".join(_bench(*argv, "--json"))]
    rows = json.loads(text)
    for row in rows:
        assert {
            "bench",
            "name",
            "ours",
            "median",
            "range",
            "unit",
            "reference",
            "ratio",
            "target",
        } <= row.keys()
        assert row["range"][0] <= row["median"] <= row["range"][1]
        assert row["reference"] and row["ratio"] > 0
    return rows


def test_pg_journal_quick_gives_both_commit_settings_beside_sqlite(postgres):
    rows = _json_rows("bench/pg_journal.py", "--quick")
    assert [row["ours"] for row in rows] == [
        "PostgreSQL journal (synchronous_commit=off)",
        "PostgreSQL journal (synchronous_commit=on)",
    ]
    assert {row["reference"] for row in rows} == {"SQLite (synchronous=NORMAL)"}


def test_stream_scale_quick_gives_cpu_per_token_and_latency():
    rows = _json_rows("bench/stream_scale.py", "--quick")
    assert [(row["unit"], row["target"]) for row in rows] == [("µs", "<= 1.5"), ("ms", "<= 2")]


def test_gateway_fanout_quick_gives_cpu_per_update_per_client():
    (row,) = _json_rows("bench/gateway_fanout.py", "--quick")
    assert row["name"].startswith("gateway CPU per update per client, 5 WebSocket clients")
    assert row["target"] == "<= 2"
