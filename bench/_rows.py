"""What a benchmark hands to bench/report.py: rows of figures, as JSON.

Every benchmark that the report runs takes ``--json`` (and ``--quick``) and
then prints, as its last line of standard output, a JSON list of rows::

    {"bench": "floor", "name": "per turn", "ours": "agentrio, memory",
     "reference": "floor", "ratio": 3.3, "median": 0.00134,
     "range": [0.00121, 0.0015], "unit": "s", "target": "<= 2"}

* ``name`` is the figure, ``ours`` the program measured, ``median`` and
  ``range`` (min, max) its value over the runs, in ``unit`` ("s" of CPU
  time, "B" of memory, "/s" of a throughput, "instr" of instructions).
* ``reference`` is what the figure is compared with in the same run, and
  ``ratio`` is ours' median over the reference's (so a time ratio above 1
  is slower than the reference, and a throughput ratio above 1 faster);
  both ``None`` when the row stands alone.
* ``target``: ``"<= 2"`` or ``">= 10"``, a bound on the ratio when there
  is a reference, else on the median itself (in ``unit``).
* ``note``: what stopped a figure from being measured ("not installed"),
  with ``median`` ``None``.
"""

from __future__ import annotations

import json
import operator
import statistics
from collections.abc import Iterable
from typing import Any

import attrs

_COMPARE = {"<=": operator.le, ">=": operator.ge}


@attrs.frozen
class Row:
    """One figure of one benchmark."""

    bench: str
    name: str
    ours: str
    median: float | None
    range: tuple[float, float] | None
    unit: str
    reference: str | None = None
    ratio: float | None = None
    target: str | None = None
    note: str | None = None

    def met(self) -> bool | None:
        """Whether the figure meets its target; ``None`` without one (or
        without a figure)."""
        value = self.ratio if self.reference is not None else self.median
        if self.target is None or value is None:
            return None
        op, bound = self.target.split()
        return bool(_COMPARE[op](value, float(bound)))

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self, value_serializer=lambda _i, _a, v: list(v) if isinstance(v, tuple) else v)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Row:
        known = {field.name for field in attrs.fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        if values.get("range") is not None:
            values["range"] = (float(values["range"][0]), float(values["range"][1]))
        return cls(**values)


def spread_row(
    bench: str,
    name: str,
    ours: str,
    values: Iterable[float],
    unit: str = "s",
    *,
    reference: str | None = None,
    reference_values: Iterable[float] | None = None,
    target: str | None = None,
    note: str | None = None,
) -> Row:
    """A row from the values of the runs, with its ratio to the reference's
    values when given (ratio of the medians)."""
    mine = tuple(values)
    median = statistics.median(mine)
    ratio = None
    if reference_values is not None:
        theirs = statistics.median(tuple(reference_values))
        ratio = median / theirs if theirs else None
    return Row(bench, name, ours, median, (min(mine), max(mine)), unit, reference, ratio, target, note)


def missing_row(bench: str, name: str, ours: str, note: str, unit: str = "s") -> Row:
    """A figure that could not be measured, and why."""
    return Row(bench, name, ours, None, None, unit, note=note)


def emit(rows: Iterable[Row], as_json: bool = True) -> None:
    """Print the rows: as JSON on the last line of standard output, for the
    report (``--json``), or for a reader."""
    if as_json:
        print(json.dumps([row.to_json() for row in rows], ensure_ascii=False))
        return
    for row in rows:
        print(f"  {row.name}")
        if row.median is None or row.range is None:
            print(f"    {row.ours}: {row.note}")
            continue
        low, high = row.range
        print(f"    {row.ours:<28} {row.median:,.4g} [{low:,.4g}–{high:,.4g}] {row.unit}")
        if row.ratio is not None:
            met = row.met()
            verdict = "" if met is None else f" (target {row.target}: {'met' if met else 'MISSED'})"
            print(f"    ratio to {row.reference}: {row.ratio:.2f}×{verdict}")
        if row.note:
            print(f"    {row.note}")
