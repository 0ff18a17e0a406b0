"""`kill -9` at every step of `run` and `check` (issue 9, item 8): nothing wedged, lost or leaked.

Each test runs the real command line with `LANES_TUI_CRASH_AT=<point>` (`core.debug.crash_point`), so
the command dies by SIGKILL at that step, then shows the repository is usable again with lanes-tui's
own commands: `status` lists the lane in a sane state (or no lane at all when none was created),
`run --id <same>` works or says why and what to do, `recover` / `abandon` bring the lane to a known
state, `finish` has nothing left over, `git fsck` is clean, and the suite's autouse fixture finds
no process left behind. Accept's own points are in `test_decisions.py`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.debug import CRASH_ENV
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.paths import repo_key
from tests.conftest import git
from tests.helpers import cli, run_lane, status, wait_state, write_config
from tests.test_bad_input import _nothing_created, _one_line_error

SCRIPT = "write done.txt finished\n"
LANE = "crash-a1"
PASSING_GATE = "commands = ['{python} -c \"pass\"']"


def killed(repo: Path, point: str, *args: str) -> None:
    """Run `lanes-tui ARGS` with the hook at `point`: it must die there, by SIGKILL."""
    proc = cli(repo, *args, env={**os.environ, CRASH_ENV: point})
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)
    assert f"crashing at {point}" in proc.stderr


def lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane


def own_folder(repo: Path, lane: str) -> Path:
    """Where the lane's worktree is (write_config's root): derived, as lanes-tui derives it."""
    return repo.parent / "worktrees" / repo_key(repo) / lane


def has_worktree(repo: Path, lane: str) -> bool:
    listed = f"worktree {own_folder(repo, lane)}\n" in git(repo, "worktree", "list", "--porcelain") + "\n"
    assert listed == own_folder(repo, lane).is_dir() == bool(git(repo, "branch", "--list", f"lane/{lane}")), \
        "the worktree, its folder and its branch come and go together"
    return listed


def settled(repo: Path) -> None:
    """No lane worktree or branch left that lanes-tui would have to clean, and git's store intact."""
    assert cli(repo, "finish").stdout.splitlines()[0] == "nothing to finish"  # then NOT-PUSHED: no remote
    assert git(repo, "branch", "--list", "lane/*") == ""
    assert git(repo, "worktree", "list").count("\n") == 0
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr


# --- run ------------------------------------------------------------------------------------------

#: point -> what the killed `run` left: nothing, a lane with no supervisor (`lost`), or a live lane.
RUN_POINTS = {
    "run:validated": "nothing",  # everything checked, nothing created yet
    "run:record": "lost",  # lane.json written; no origin, worktree or supervisor
    "run:origin": "lost",  # origin.json written too; no worktree yet
    "run:worktree": "lost",  # the worktree and lane/ branch exist; no supervisor
    "run:spawned": "live",  # the supervisor runs; `run` died before printing the id
}


@pytest.mark.slow
@pytest.mark.parametrize("point", list(RUN_POINTS))
def test_run_killed_at_each_step(repo: Path, point: str) -> None:
    write_config(repo)
    killed(repo, point, "run", "--prompt", SCRIPT, "--id", "crash")
    left = RUN_POINTS[point]
    if left == "nothing":
        assert status(repo) == [] and "no lanes yet" in cli(repo, "status").stdout
        _nothing_created(repo)
        assert run_lane(repo, SCRIPT, lane_id="crash") == LANE  # the id is free
        assert wait_state(repo, LANE) == f"{LANE} ready OK"
    else:
        (row,) = status(repo)  # `status` reconciles: a lane with no supervisor is settled, not left queued
        assert row["id"] == LANE and row["problem"] is None
        if left == "live":
            assert wait_state(repo, LANE) == f"{LANE} ready OK"
        else:
            assert row["state"] == "lost" and row["state_reason"] == "its supervisor is gone and left no receipt"
            assert has_worktree(repo, LANE) == (point == "run:worktree")
        _one_line_error(cli(repo, "run", "--prompt", SCRIPT, "--id", "crash"),
                        f"lane {LANE} already exists", "`lanes-tui recover` / `abandon` the existing lane")
        if left == "lost":
            found = cli(repo, "recover", LANE)
            assert found.returncode == 0 and found.stdout.startswith(f"{LANE}: lost (its supervisor is gone"), found
        if point == "run:worktree":  # the next attempt from the same task, then the lost one cleaned away
            relaunched = cli(repo, "recover", LANE, "--relaunch", check=True).stdout.splitlines()[-1]
            assert relaunched == "crash-a2" and wait_state(repo, relaunched) == "crash-a2 ready OK"
            assert cli(repo, "abandon", relaunched).returncode == 0
    abandoned = cli(repo, "abandon", LANE)
    assert abandoned.returncode == 0, abandoned.stderr
    assert status(repo, LANE)["state"] == "abandoned" and not has_worktree(repo, LANE)
    assert not (lane_dir(repo, LANE) / "busy").exists()
    _one_line_error(cli(repo, "run", "--prompt", SCRIPT, "--id", "crash"),
                    f"lane {LANE} already exists", "it is abandoned and lane ids are never reused: pick another --id")
    settled(repo)


# --- check ----------------------------------------------------------------------------------------


@pytest.fixture()
def programme(repo: Path) -> Path:
    """The lead works on a programme branch (main is protected by default), so accept can finish."""
    git(repo, "checkout", "-q", "-b", "programme")
    return repo


#: point -> the lane's state once `status` has reconciled it.
CHECK_POINTS = {
    "check:locked": "ready",  # the lane lock taken, nothing changed yet
    "check:checking": "exited",  # `checking` written, no gate started
    "check:gates": "exited",  # the gates passed, the packet not yet rewritten
    "check:packet": "exited",  # the new packet says `passed`, the lane is still `checking`
}


@pytest.mark.slow
@pytest.mark.parametrize("point", list(CHECK_POINTS))
def test_check_killed_at_each_step(programme: Path, point: str) -> None:
    repo = programme
    write_config(repo, gates=PASSING_GATE)
    lane = run_lane(repo, SCRIPT, lane_id="crash")
    assert wait_state(repo, lane) == f"{lane} ready OK"
    killed(repo, point, "check", lane)
    assert (lane_dir(repo, lane) / "busy").is_dir()  # the kill left the lock file, held by nobody
    row = status(repo, lane)
    assert row["state"] == CHECK_POINTS[point], row
    packet = json.loads((lane_dir(repo, lane) / "packet.json").read_text())
    if CHECK_POINTS[point] == "ready":
        assert packet["gates_status"] == "passed"
        _one_line_error(cli(repo, "recover", lane), f"lane {lane} is ready; there is nothing to recover")
    else:  # never an old (or a half-finished check's) `passed` read as current
        assert "its check was interrupted" in row["state_reason"] and f"lanes-tui check {lane}" in row["state_reason"]
        assert packet["gates_status"] == "not-run" and [g["status"] for g in packet["gates"]] == ["not-run"]
        _one_line_error(cli(repo, "accept", lane), "the lane is exited, not ready", "--override")
        found = cli(repo, "recover", lane)
        assert found.returncode == 0 and found.stdout.startswith(f"{lane}: exited (its check was interrupted"), found
    assert not (lane_dir(repo, lane) / "gates-running.json").exists()
    checked = cli(repo, "check", lane)
    assert checked.returncode == 0 and checked.stdout.splitlines()[-1] == f"{lane}: gates passed, next: review"
    assert status(repo, lane)["state"] == "ready" and not (lane_dir(repo, lane) / "busy").exists()
    accepted = cli(repo, "accept", lane)
    assert accepted.returncode == 0, accepted.stderr
    assert (repo / "done.txt").read_text() == "finished\n"  # the lane's work, not lost
    settled(repo)


def test_a_lane_being_created_is_not_declared_lost(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run` holds the new lane's lock until its supervisor is up: a `status` meanwhile (the dashboard
    reconciles every 2 s) must not settle a lane whose record exists before its worktree does."""
    write_config(repo)
    seen: list[dict[str, object]] = []
    real = worktrees.create_worktree

    def create_and_look(*args: object, **kwargs: object) -> worktrees.WorktreeInfo:
        seen.extend(status(repo))  # a real `lanes-tui status` in another process, right now
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(worktrees, "create_worktree", create_and_look)
    record = launch_lane(repo, load_config(repo), LaunchRequest(prompt=SCRIPT, slug="race"), detach=False)
    assert [(row["id"], row["state"]) for row in seen] == [(record.id, "queued")]
    assert not (lane_dir(repo, record.id) / "busy").exists()  # released on the way out
    assert status(repo, record.id)["state"] == "lost"  # no supervisor was started here (detach=False)
    assert cli(repo, "abandon", record.id).returncode == 0
    settled(repo)
