"""The context meter end to end: fake claude and fake codex under real detached supervisors, the meter
read back through the real `lanes-tui status --json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lanes_tui.engine import LaneStatus
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.events import LaneChanged
from lanes_tui.engine.state.meters import METERS_FILE, RunMeter
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.fakes import CLAUDE_TABLE, CODEX_TABLE
from tests.helpers import cli, run_lane, status, wait_for, wait_state, write_config


def _meter(row: dict[str, Any]) -> dict[str, Any]:
    """The row's context meter without its rounded fraction (checked through `LaneStatus`)."""
    context = dict(row["context"])
    del context["fraction"]
    return context


def _open_question(repo: Path, lane: str) -> dict[str, Any]:
    def found() -> list[dict[str, Any]]:
        return [q for q in json.loads(cli(repo, "inbox", "--json", check=True).stdout) if q["lane"] == lane]
    return wait_for(found)[0]


def test_claude_lane_shows_its_context_live_then_against_the_reported_window(repo: Path) -> None:
    write_config(repo, chains='backend = ["fakeclaude"]', extra=CLAUDE_TABLE)
    lane = run_lane(repo, "context", lane_id="claude-ctx")
    question = _open_question(repo, lane)
    wait_state(repo, lane, "waiting", timeout=10)
    live = wait_for(lambda: (row := status(repo, lane))["context"] and row)
    # msg_01's prompt: 10 fresh + 100 cache reads + 20 cache writes; the sub-agent's 150k is its own.
    assert _meter(live) == {"used": 130, "window": 200_000, "warn": 0.85, "source": "table", "near": False}
    assert cli(repo, "answer", question["id"], "yes").returncode == 0
    wait_state(repo, lane)
    row = status(repo, lane)
    assert (row["state"], row["result"]) == ("ready", "OK"), row
    # msg_02's prompt (7 + 200), against the window the result line reported.
    assert _meter(row) == {"used": 207, "window": 200_000, "warn": 0.85, "source": "reported", "near": False}


def test_codex_lane_context_from_token_count_with_the_configured_window_and_threshold(repo: Path) -> None:
    table = CODEX_TABLE + "context_window = 2500\ncontext_warn = 0.5\n"
    write_config(repo, chains='backend = ["fakecodex"]', extra=table, lanes_extra="context_warn = 0.95\n")
    lane = run_lane(repo, "token_count turns 2", lane_id="codex-ctx")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "OK", row
    # The second turn's request read 2000 tokens: 80 % of the lead's 2500, past the provider's 50 %.
    assert row["context"] == {"used": 2000, "window": 2500, "fraction": 0.8, "warn": 0.5, "source": "config",
                              "near": True}
    meter = LaneStatus.from_json(row).context
    assert meter is not None and meter.near
    assert row["tokens"]["input"] == 2000  # the turn totals still add up as tokens


def test_codex_lane_without_token_count_has_no_context(repo: Path) -> None:
    write_config(repo, chains='backend = ["fakecodex"]', extra=CODEX_TABLE)
    lane = run_lane(repo, "turns 2", lane_id="codex-noctx")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "OK" and row["tokens"]["input"] == 2000
    assert row["context"] is None  # never the turn totals shown as a context


def test_the_live_engine_rereads_a_lane_when_only_its_meters_change(repo: Path) -> None:
    """The supervisor rewrites `meters.json`, never `lane.json`, while the agent works: the dashboard's
    engine must still see each new context figure (and nothing when the file did not change)."""
    paths = StatePaths(repo)
    paths.ensure()
    store = LaneStore(paths)
    store.create(LaneRecord(id="meter-a1", slug="meter", attempt=1, task_type="backend", prompt="p", chain=["claude"],
                            repo=str(repo), worktree=str(repo.parent / "wt"), branch="lane/meter-a1",
                            base_sha="0" * 40, target_branch="main", state="running"))
    engine = Engine(repo)
    engine.scanner.scan(True)
    meter = RunMeter(paths.lane("meter-a1").dir / METERS_FILE, FakeClock(), provider="claude", model="sonnet")
    for used in (120_000, 180_000):
        meter.set_context(used)
        meter.flush()
        changed = [e for e in engine.scanner.scan(False) if isinstance(e, LaneChanged)]
        assert [(e.status.state, e.status.context and e.status.context.used) for e in changed] == [("running", used)]
    assert [e for e in engine.scanner.scan(False) if isinstance(e, LaneChanged)] == []
