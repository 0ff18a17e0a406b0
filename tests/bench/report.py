"""Tables, percentiles and the JSON record every benchmark writes next to itself."""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) by linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table, right-aligned numbers."""
    cells = [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def markdown(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" for _ in headers) + "|"]
    out += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)


def write_json(name: str, record: dict[str, Any], directory: Path | None = None) -> Path:
    """`<directory>/<name>-<timestamp>.json`, written whole (a temporary file renamed into place)."""
    folder = directory or RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"{name}-{stamp}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)
    return path


def command_line() -> str:
    """How this run was started, for the record."""
    return "python -m tests.bench " + " ".join(sys.argv[1:])


def publish(name: str, params: dict[str, Any], results: list[dict[str, Any]], headers: Sequence[str],
            row: Callable[[dict[str, Any]], Sequence[Any]], out: str | None) -> int:
    """The end of a benchmark's `main`: one record (command, date, machine, parameters, results, the
    markdown table) written as JSON, then the table in both forms and the file's path. Returns 0."""
    from tests.bench.env import machine_info

    rows = [row(r) for r in results]
    record = {"bench": name, "command": command_line(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
              "machine": machine_info(), "params": params, "results": results,
              "table": markdown(headers, rows)}
    path = write_json(name, record, Path(out) if out else None)
    print(table(headers, rows))
    print()
    print(record["table"])
    print(f"\n{path}")
    return 0
