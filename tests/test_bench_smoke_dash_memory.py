"""Smoke test of `tests.bench.dash_memory` at tiny sizes: the report's shape, never its figures."""

from __future__ import annotations

import math

from tests.bench import dash_memory
from tests.bench.env import BenchRepo


def test_dash_memory_smoke() -> None:
    steps = dash_memory.measure_imports()
    assert [r["what"] for r in steps] == [label for label, _ in dash_memory.IMPORT_STEPS]
    assert all(r["rss_mb"] > 0 and r["pss_mb"] > 0 and r["modules"] > 0 for r in steps)
    with BenchRepo(capacity=1) as world:
        shown = dash_memory.measure_dashboard(world, settle=0.2)
        traced = dash_memory.trace_dashboard(world, settle=0.2)
    assert shown["rss_mb"] > 0 and not math.isnan(shown["pss_mb"])
    assert traced["added_mb"] > 0 and "lanes_tui" in traced["groups_mb"] and "textual" in traced["groups_mb"]
    assert len(dash_memory.row(shown)) == len(dash_memory.HEADERS)
