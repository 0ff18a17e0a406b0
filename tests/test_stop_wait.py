"""`lanes-tui stop ID | --all`, `wait --any`, `wait`'s timeout exit code, and per-run time limits.

Real sim lanes under real supervisors; every assertion waits on an event (a state, a file, a
process gone) with a generous bound, never on a fixed sleep.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import psutil

from lanes_tui.engine.lanes.launcher import leftover_processes, supervisor_alive
from tests.helpers import cli, output, run_lane, status, wait_for, wait_state, write_config


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stop_ends_the_lane_and_its_whole_tree_and_keeps_the_work(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "write note.txt kept\nspawn-setsid 120\nsay started\nsleep 120", lane_id="halt")
    try:
        wait_for(lambda: "started" in output(repo, lane))
        spawned = re.search(r"spawned setsid child (\d+)", output(repo, lane))
        assert spawned is not None
        escaped = int(spawned.group(1))
        proc = cli(repo, "stop", lane)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"stopped {lane}: exited LANE-FAILED (stopped by the lead); worktree kept: ")
        # `stop` returned: the supervisor, the agent and the child in its own session are gone already.
        assert not supervisor_alive(repo, lane) and leftover_processes(repo, lane) == []
        assert _gone(escaped)
        row = status(repo, lane)
        assert (row["state"], row["result"], row["state_reason"]) == ("exited", "LANE-FAILED", "stopped by the lead")
        worktree = Path(row["worktree"])
        assert (worktree / "note.txt").read_text() == "kept\n"
        assert (repo / ".lanes/state/lanes" / lane / "receipt.json").exists()
        again = cli(repo, "stop", lane)
        assert again.returncode == 2 and f"lane {lane} is not running (exited" in again.stderr
    finally:
        cli(repo, "stop", "--all")


def test_stop_all_and_refusals(repo: Path) -> None:
    write_config(repo)
    lanes = [run_lane(repo, "say up\nsleep 120", lane_id=name) for name in ("one", "two")]
    try:
        wait_for(lambda: all("up" in output(repo, lane) for lane in lanes))
        missing = cli(repo, "stop", "nope-a1")
        assert missing.returncode == 2 and "no lane 'nope-a1'" in missing.stderr
        assert cli(repo, "stop").returncode == 2  # a lane id or --all
        proc = cli(repo, "stop", "--all", "--json")
        assert proc.returncode == 0, proc.stderr
        stopped = json.loads(proc.stdout)
        assert sorted(r["id"] for r in stopped) == sorted(lanes)
        assert {(r["state"], r["result"]) for r in stopped} == {("exited", "LANE-FAILED")}
        assert all(Path(r["worktree"]).is_dir() for r in stopped)
        nothing = cli(repo, "stop", "--all")
        assert nothing.returncode == 0 and "no lane is running" in nothing.stdout
    finally:
        cli(repo, "stop", "--all")


def test_wait_any_wakes_on_a_lane_that_comes_to_need_the_lead(repo: Path) -> None:
    write_config(repo)
    # Nothing needs the lead yet: `wait --any` blocks (started before the lane, so it sees the change).
    waiter = subprocess.Popen([sys.executable, "-m", "lanes_tui.app", "wait", "--any", "--timeout", "60"],
                              cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        lane = run_lane(repo, "say working\nask --yes-no --timeout 120 Proceed?\nsay done", lane_id="asker")
        out, err = waiter.communicate(timeout=60)
        assert waiter.returncode == 0, err
        assert out.strip() == f"{lane} waiting"
        again = cli(repo, "wait", "--any", "--states", "waiting", "--json", "--timeout", "10")
        assert again.returncode == 0, again.stderr
        found = json.loads(again.stdout)
        assert (found["id"], found["state"]) == (lane, "waiting") and found["reason"]
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate()
        cli(repo, "stop", "--all")


def test_wait_timeout_exits_124_and_refusals_exit_2(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "say up\nsleep 120", lane_id="slow")
    try:
        wait_for(lambda: "up" in output(repo, lane))
        timed = cli(repo, "wait", "--any", "--timeout", "1")
        assert timed.returncode == 124, timed.stderr
        assert timed.stdout == "" and len(timed.stderr.strip().splitlines()) == 1
        assert "no lane became" in timed.stderr
        one = cli(repo, "wait", lane, "--timeout", "1")
        assert one.returncode == 124 and f"{lane} is still running after 1s" in one.stderr
        assert cli(repo, "wait", "nope-a1", "--timeout", "1").returncode == 2  # no such lane: a refusal
        assert cli(repo, "wait", "--any", "--states", "finished").returncode == 2
        assert cli(repo, "wait", "--any", lane).returncode == 2
        assert cli(repo, "wait").returncode == 2
        assert cli(repo, "wait", lane, "--until", "running", "--timeout", "5").returncode == 0
    finally:
        cli(repo, "stop", "--all")


def test_per_run_idle_timeout_reaches_the_watchdog_and_relaunch_keeps_it(repo: Path) -> None:
    write_config(repo, idle_timeout_s=300, sample_s=0.2)
    lane = run_lane(repo, "sleep 60", lane_id="quiet", extra=("--idle-timeout", "1"))
    try:
        wait_state(repo, lane, timeout=60)
        row = status(repo, lane)
        assert (row["state"], row["result"]) == ("stalled", "LANE-STALLED")
        record = json.loads((repo / ".lanes/state/lanes" / lane / "lane.json").read_text())
        assert record["caps"] == {"idle_timeout_s": 1.0}
        proc = cli(repo, "recover", lane, "--relaunch")
        assert proc.returncode == 0, proc.stderr
        new = proc.stdout.strip().splitlines()[-1]
        assert json.loads((repo / ".lanes/state/lanes" / new / "lane.json").read_text())["caps"] == record["caps"]
        wait_state(repo, new, "stalled", timeout=60)  # the relaunch stalls after 1s too
    finally:
        cli(repo, "stop", "--all")


def test_per_run_wall_clock_timeout(repo: Path) -> None:
    write_config(repo, idle_timeout_s=300, sample_s=0.2)
    lane = run_lane(repo, "sleep 60", lane_id="wall", extra=("--timeout", "1", "--idle-timeout", "0"))
    try:
        wait_state(repo, lane, timeout=60)
        row = status(repo, lane)
        assert (row["result"], row["state_reason"]) == ("LANE-FAILED", "wall-clock limit of 1s reached")
        assert cli(repo, "run", "--prompt", "x", "--timeout", "0").returncode == 2
    finally:
        cli(repo, "stop", "--all")
