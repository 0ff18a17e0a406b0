"""An agent that exits 0 and changed nothing ends NO-CHANGES: never `ready`, no gates, never accepted.

Real sim agents under real detached supervisors, in real git repositories.
"""

from __future__ import annotations

import json
from pathlib import Path

from lanes_tui.engine.plans.decide import LaneFact
from tests.conftest import git
from tests.helpers import cli, run_lane, status, wait_state, write_config

GATE = 'commands = ["{python} -c \\"open(\'gate-ran\', \'w\').write(\'x\')\\""]'


def test_a_lane_that_changed_nothing_is_no_changes_not_ready(repo: Path) -> None:
    write_config(repo, gates=GATE)
    lane = run_lane(repo, "say I looked around and decided all is fine\n", lane_id="idle")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert (row["state"], row["result"]) == ("exited", "NO-CHANGES")
    assert row["state_reason"] == "exited 0 and changed nothing"
    assert row["providers_tried"][0]["result"] == "NO-CHANGES" and row["providers_tried"][0]["returncode"] == 0
    worktree = Path(row["worktree"])
    assert not (worktree / "gate-ran").exists()  # the gates never ran on the unchanged tree
    packet = json.loads((repo / ".lanes/state/lanes" / lane / "packet.json").read_text())
    assert packet["result"] == "NO-CHANGES" and packet["gates"] == [] and packet["next"] == "redo"
    cli(repo, "check", lane)  # the lead's own check of the unchanged tree: still nothing to accept
    assert (status(repo, lane)["state"], status(repo, lane)["result"]) == ("exited", "NO-CHANGES")
    refused = cli(repo, "accept", lane)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    # recover --relaunch starts the next attempt, which does the work and is judged as usual.
    relaunched = cli(repo, "recover", lane, "--relaunch", check=True)
    assert "idle-a2" in relaunched.stdout + relaunched.stderr
    git(worktree, "status")  # the first attempt's worktree is still there to read


def test_ignored_files_and_the_cli_s_own_files_are_not_changes(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore logs")
    write_config(repo)
    lane = run_lane(repo, "write build.log noise\nwrite .aider.chat.history.md chat\n", lane_id="ignored")
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "NO-CHANGES"
    done = run_lane(repo, "write build.log noise\nwrite notes.txt real work\n", lane_id="worked")
    wait_state(repo, done)
    row = status(repo, done)
    assert (row["state"], row["result"]) == ("ready", "OK")


def test_a_rate_limit_line_then_exit_0_with_nothing_done_is_retried_not_no_changes(repo: Path) -> None:
    """The sim prints its rate-limit line and exits 0 having done nothing (aider's way): the lane is
    retried in place; stopped by the lead during the back-off, it ends as the retry left it."""
    write_config(repo)
    lane = run_lane(repo, "say SIM-RATE-LIMITED: 429 Too Many Requests\n", lane_id="limited")
    wait_state(repo, lane, "waiting")
    row = status(repo, lane)
    assert row["state_reason"].startswith("rate limited by sim: retrying in 30s (retry 1 of 3")
    cli(repo, "stop", lane, check=True)
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "LANE-FAILED" and row["state_reason"].startswith("rate limited by sim: SIM-RATE-LIMITED")


def test_a_plan_ticket_whose_lane_changed_nothing_has_failed() -> None:
    view = LaneFact(id="t-a1", repo=Path("/r"), state="exited", result="NO-CHANGES")
    assert view.outcome == "failed"
