"""B3's floors, B5, B6 and B8 at tiny sizes, so the scripts keep working; never a speed threshold here.

B10 only for its skip path (no npm is ever run from the suite): a full B10, B7 and B9 start
dashboards in tmux or 100 lanes, too slow for the suite even at their smallest.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.bench import b3, b5, b6, b8, b10

pytestmark = pytest.mark.slow


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not math.isnan(value) and value > 0


@pytest.mark.parametrize("kind", b3.FLOORS)
def test_b3_floor_reads_the_agent_and_exits(kind: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "tests.bench.b3_floor", kind, "1.0", "0.1"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.split()[2]) > 0  # "KIND: read N bytes": the sim's lines reached the loop
    assert b3.run_ns(1) > 0  # the scheduler's nanosecond counter the script reads is there


def test_b5_smoke() -> None:
    result = b5.measure(files=50, commits=5, runs=1)
    assert _positive(result["raw_median_s"]) and _positive(result["first_byte_median_s"])
    assert result["launch_returned_median_s"] <= result["first_byte_median_s"]


def test_b6_smoke() -> None:
    result = b6.measure(files=50, commits=5, changed=3, runs=1)
    assert _positive(result["raw_median_s"]) and _positive(result["accept_median_s"])


def test_b8_smoke_loses_nothing() -> None:
    result = b8.measure(lines=100_000, presses=0, with_b1=False)
    assert result["lost"] == 0 and result["duplicated_or_reordered"] == 0
    assert result["lines_seen"] == 100_000 and result["log_bytes"] > 2**20


def test_b10_without_npm_says_why(tmp_path: Path) -> None:
    binary, why = b10.ccmanager_binary(tmp_path / "empty-cache", install=False)
    assert binary is None and "not installed" in why


def test_radar_bench_smoke(tmp_path: Path) -> None:
    from tests.bench import radar_cost

    assert radar_cost.main(["--sizes", "2,3", "--shared", "2", "--out", str(tmp_path)]) == 0
    (written,) = tmp_path.glob("radar-*.json")
    record = json.loads(written.read_text())
    assert [r["lanes"] for r in record["results"]] == [2, 3]
    for result in record["results"]:
        assert result["ready"] == result["lanes"] and result["problems"] == 0
        assert result["first_looks"] >= 1 and result["first_git_procs"] > 0
        for key in ("first_wall_ms", "first_cpu_ms", "full_look_ms", "steady_longest_ms"):
            assert _positive(result[key]), key
        assert result["steady_cpu_ms_per_min"] >= 0 and result["steady_git_procs_per_min"] >= 0
    # lane 2 edits README.md; with lane 3 alone on new files nothing overlaps yet: no finding
    assert [r["lanes_with_findings"] for r in record["results"]] == [0, 0]
