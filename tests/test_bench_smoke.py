"""B1 and B2 at a tiny size, so the benchmarks keep working; never a speed threshold here."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.bench import b2
from tests.bench.__main__ import parse, run

pytestmark = pytest.mark.slow


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not math.isnan(value) and value > 0


def _bench(tmp_path: Path, *argv: str) -> dict[str, Any]:
    records = run(parse([*argv, "--sizes", "2", "--runs", "1", "--out", str(tmp_path)]), command="smoke")
    assert len(records) == 1
    record = next(iter(records.values()))
    written = json.loads(Path(record["json"]).read_text())
    assert written["results"] == json.loads(json.dumps(record["results"]))
    assert written["machine"]["logical_cores"] >= 1 and written["machine"]["textual"]
    assert "| lanes |" in written["table"]
    assert [r["lanes"] for r in record["results"]] == [2]
    return dict(record["results"][0])


def test_b1_smoke(tmp_path: Path) -> None:
    result = _bench(tmp_path, "b1", "--presses", "6", "--warmup-presses", "2", "--settle", "0.5")
    (run_,) = result["runs"]
    assert len(run_["cursor_ms"]) + run_["timeouts"] == 6
    assert run_["cursor_ms"], "no press was ever seen on screen"
    assert all(_positive(v) for v in run_["cursor_ms"] + run_["output_ms"])
    for key in ("cursor_p50_ms", "cursor_p95_ms", "cursor_max_ms", "output_p50_ms", "frames_per_s"):
        assert _positive(result[key]), key
    assert result["cursor_p50_ms"] <= result["cursor_p95_ms"] <= result["cursor_max_ms"]


@pytest.mark.skipif(not b2.have_tmux(), reason="tmux is not installed (.ci/run installs it)")
def test_b2_smoke(tmp_path: Path) -> None:
    result = _bench(tmp_path, "b2", "--window", "1.5", "--steady", "0.5")
    assert result["supervisors_alive"] == 2
    for key in ("dashboard_cpu_percent", "dashboard_rss_mb", "supervisor_rss_mb", "lanes_tui_cpu_percent"):
        assert _positive(result[key]), key
    for key in ("supervisors_cpu_percent", "agents_cpu_percent", "tmux_cpu_percent"):
        assert result[key] >= 0 and not math.isnan(result[key]), key
