"""One row of the benchmark table: ours beside its floor or peer, measured
in the same run, as a ratio.

A benchmark script exposes ``rows(runs=RUNS, quick=False) -> list[Row]``
and prints ``json.dumps([row.to_json() for row in rows])`` with ``--json``
(``emit``), so that a report can collect its rows by calling the function
or by running the command.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
from _measure import Spread


@attrs.frozen
class Row:
    """``ours`` and ``floor`` in ``unit`` (median and range of the runs);
    ``ratio`` is ours over the floor's medians, whatever ``unit``; the
    target is met when the ratio is at most ``target`` (at least, when
    ``higher_is_better``: then the unit is a rate)."""

    benchmark: str
    name: str
    ours: Spread
    floor: Spread
    unit: str
    target: float
    floor_name: str = "floor"
    higher_is_better: bool = False
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.ours / self.floor

    @property
    def met(self) -> bool:
        return self.ratio >= self.target if self.higher_is_better else self.ratio <= self.target

    def to_json(self) -> dict[str, Any]:
        def spread(s: Spread) -> dict[str, float]:
            return {"median": s.median, "min": min(s.values), "max": max(s.values)}

        return {
            "benchmark": self.benchmark,
            "name": self.name,
            "unit": self.unit,
            "ours": spread(self.ours),
            "floor": spread(self.floor),
            "floor_name": self.floor_name,
            "ratio": self.ratio,
            "target": ("≥ " if self.higher_is_better else "≤ ") + f"{self.target:g}×",
            "met": self.met,
            "note": self.note,
        }

    def show(self) -> str:
        def fmt(value: float) -> str:
            return f"{value:,.3g}" if value < 1000 else f"{value:,.0f}"

        def spread(s: Spread) -> str:
            return f"{fmt(s.median)} [{fmt(min(s.values))}–{fmt(max(s.values))}] {self.unit}"

        verdict = "met" if self.met else "MISSED"
        target = ("≥ " if self.higher_is_better else "≤ ") + f"{self.target:g}×"
        return (
            f"  {self.name}\n    ours  {spread(self.ours)}\n    {self.floor_name:<5} {spread(self.floor)}\n"
            f"    ratio {self.ratio:.2f}× (target {target}: {verdict}){'  ' + self.note if self.note else ''}"
        )


def emit(rows: list[Row], as_json: bool) -> None:
    """Print the rows: as JSON (``--json``) or for a reader."""
    if as_json:
        print(json.dumps([row.to_json() for row in rows], indent=1))
    else:
        for row in rows:
            print(row.show())
