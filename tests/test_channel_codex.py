"""The codex-json channel end to end: thread id as the session id, turn usage, an estimated cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lanes_tui.engine.state.meters import PRICES, Usage
from tests.fakes import CODEX_TABLE, CODEX_THREAD, FAKE_CODEX, provider_table
from tests.helpers import run_lane, status, wait_state, write_config

ONE_TURN = Usage(input=1000, cached_input=600, output=100)


def test_codex_tokens_thread_and_estimated_cost(repo: Path) -> None:
    write_config(repo, chains='backend = ["fakecodex"]', extra=CODEX_TABLE)
    lane = run_lane(repo, "fix the bug", lane_id="codex")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "OK", row
    assert row["session_id"] == CODEX_THREAD
    assert row["tokens"] == {"total": 1100, "input": 1000, "cached_input": 600, "cache_write": 0, "output": 100}
    # 400 uncached at 1.25, 600 cached at 0.125, 100 out at 10 dollars per million.
    assert row["cost_usd"] == pytest.approx(PRICES["gpt-5-codex"].cost(ONE_TURN)) == pytest.approx(0.001575)
    assert row["cost_estimated"] is True


def test_meters_accumulate_across_a_chain(repo: Path) -> None:
    broke = provider_table("codexbroke", FAKE_CODEX, "exec", "--json", "-m", "{model}", "-", channel="codex-json",
                           model="gpt-5-codex", extra='budget_patterns = ["Turn 2 done"]\n')
    write_config(repo, chains='backend = ["codexbroke", "fakecodex"]', extra=broke + CODEX_TABLE)
    lane = run_lane(repo, "turns 2", lane_id="codexchain")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert [(t["provider"], t["result"]) for t in row["providers_tried"]] == [
        ("codexbroke", "OUT-OF-BUDGET"), ("fakecodex", "OK")]
    # Two turns in the first run, two in the second: four turns in all.
    assert row["tokens"]["total"] == 4 * 1100 and row["tokens"]["cached_input"] == 4 * 600
    assert row["cost_usd"] == pytest.approx(4 * 0.001575)
    meters = json.loads((repo / ".lanes/state/lanes" / lane / "meters.json").read_text())
    assert [(r["provider"], r["total"]) for r in meters["runs"]] == [("codexbroke", 2200), ("fakecodex", 2200)]
    assert all(r["session_id"] == CODEX_THREAD for r in meters["runs"])
