"""`init`, `doctor` and `status` as a lead runs them."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil

from lanes_tui.engine.state.samples import SampledProc, parse_sample
from tests.helpers import cli, output, run_lane, wait_for, wait_state, write_config


def test_init_writes_a_commented_config_once(repo: Path) -> None:
    first = cli(repo, "init")
    assert first.returncode == 0, first.stderr
    text = (repo / ".lanes/config.toml").read_text()
    assert "[lanes]" in text and "max_parallel" in text and "#" in text
    assert (repo / ".lanes/.gitignore").read_text().strip() == "state/"
    again = cli(repo, "init")
    assert again.returncode != 0 and "already" in again.stderr and "--force" in again.stderr
    assert cli(repo, "init", "--force").returncode == 0
    assert cli(repo, "status").returncode == 0  # the written default parses


def test_doctor_reports_providers_and_lost_lanes(repo: Path) -> None:
    write_config(repo, chains='backend = ["sim"]\nhard = ["codex", "sim"]')
    lane = run_lane(repo, "say up\nsleep 600\n", lane_id="gone")
    wait_state(repo, lane, "running")
    wait_for(lambda: "up" in output(repo, lane))
    sup = json.loads((repo / ".lanes/state/lanes/gone-a1/supervisor.json").read_text())
    agent = json.loads((repo / ".lanes/state/lanes/gone-a1/lane.json").read_text())["agent_pid"]
    os.kill(sup["pid"], signal.SIGKILL)
    wait_for(lambda: not psutil.pid_exists(sup["pid"]) or psutil.Process(sup["pid"]).status() == "zombie")
    report = cli(repo, "doctor")
    os.killpg(agent, signal.SIGKILL)
    assert "provider sim" in report.stdout and "ok" in report.stdout
    assert "provider codex" in report.stdout and "missing" in report.stdout
    assert "chain provider 'codex' is not installed" in report.stdout
    assert "lost lane gone-a1" in report.stdout and "lanes-tui recover gone-a1" in report.stdout
    assert report.returncode == 1


def test_status_json_lists_every_lane(repo: Path) -> None:
    write_config(repo)
    assert json.loads(cli(repo, "status", "--json").stdout) == []
    first = run_lane(repo, "write a.txt a\n", lane_id="one")
    second = run_lane(repo, "say b\n", lane_id="two")
    for lane in (first, second):
        wait_state(repo, lane)
    rows = json.loads(cli(repo, "status", "--json").stdout)
    assert [r["id"] for r in rows] == ["one-a1", "two-a1"]
    table = cli(repo, "status").stdout
    assert "one-a1" in table and "ready" in table


#: The `status --json` contract: PRODUCT.md's required fields and the rest the dashboard shows.
STATUS_KEYS = ["id", "task", "task_type", "state", "state_reason", "result", "provider", "providers_tried", "chain",
               "attempt", "worktree", "branch", "base_sha", "target_branch", "created", "updated", "idle_s",
               "cpu_percent", "rss_bytes", "procs", "output_bytes", "tokens", "cost_usd", "cost_estimated",
               "context", "session_id", "stall", "superseded_by", "problem", "lock_wait", "locks", "gate_wait", "fired",
               "conflicts", "plan", "ticket", "scope", "review", "group", "rank", "runner", "node", "lead_note"]


def test_status_json_is_the_typed_status(repo: Path) -> None:
    """`status --json` is `LaneStatus.to_json()`: the same keys in the same order, and it reads back."""
    from lanes_tui.engine import LaneStatus

    write_config(repo)
    lane = run_lane(repo, "write typed.txt typed\n", lane_id="typed")
    wait_state(repo, lane)
    row = json.loads(cli(repo, "status", lane, "--json").stdout)[0]
    assert list(row) == STATUS_KEYS
    status = LaneStatus.from_json(row)
    assert (status.id, status.state, status.provider, status.model) == (lane, "ready", "sim", "sim")
    assert status.to_json() == row
    sampled = status.with_sample(parse_sample({"idle_s": 3.0, "cpu_percent": 50.0, "tree": [{"pid": 1}]}))
    assert (sampled.idle_s, sampled.cpu_percent, sampled.tree) == (3.0, 50.0, (SampledProc(pid=1),))
    assert "tree" not in sampled.to_json() and status.tree is None


def test_a_garbled_sample_never_reaches_a_pane_as_a_bad_number() -> None:
    """samples.jsonl can be written by an agent: bad figures are dropped, the rest passes."""
    from lanes_tui.engine import LaneStatus

    garbled = {"t": 5.0, "idle_s": "soon", "cpu_percent": float("nan"), "rss_bytes": 10**40, "procs": True,
               "output_bytes": 12, "tree": [{"pid": 1}, "not a process"]}
    sample = parse_sample(garbled)
    assert (sample.t, sample.output_bytes, sample.tree) == (5.0, 12, (SampledProc(pid=1),))
    assert (sample.idle_s, sample.cpu_percent, sample.rss_bytes, sample.procs) == (None, None, None, None)
    assert len(sample.problems) == 5
    status = LaneStatus(id="x-a1", state="running", idle_s=3.0).with_sample(sample)
    assert (status.idle_s, status.cpu_percent, status.tree) == (3.0, 0.0, (SampledProc(pid=1),))
