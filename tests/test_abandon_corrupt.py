"""`abandon --force` of a lane whose `lane.json` is corrupt (issue 9): cleaned from its id and origin alone.

Such a record cannot be read (`LaneStore.read` raises), so nothing may take a path or a name from it:
the worktree and `lane/<id>` are derived from the lane id and `origin.json`, git must confirm them,
the lane's processes are stopped by its id, and the corrupt file is kept aside. Real lanes, real git.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lanes_tui.engine.state.paths import repo_key
from tests.conftest import git
from tests.helpers import cli, run_lane, status, wait_state, write_config
from tests.test_bad_input import _one_line_error


def lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane


def own_folder(repo: Path, lane: str) -> Path:
    return repo.parent / "worktrees" / repo_key(repo) / lane


def fsck_clean(repo: Path) -> None:
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr


def kept_aside(repo: Path, lane: str) -> list[Path]:
    return sorted(lane_dir(repo, lane).glob("lane.json.corrupt-*"))


def corrupt(repo: Path, lane: str, how: str, other: str) -> bytes:
    """Break the lane's record; every variant names the other lane's worktree or branch where it can."""
    path = lane_dir(repo, lane) / "lane.json"
    record = json.loads(path.read_text())
    elsewhere = {"worktree": str(own_folder(repo, other)), "branch": f"lane/{other}", "worktree_root": "/"}
    if how == "not-json":
        data = path.read_bytes()[:40]
    elif how == "wrong-types":
        data = json.dumps({**record, **elsewhere, "state": [1, 2], "attempt": "1"}).encode()
    else:  # an impostor: a well-formed record that speaks for the other lane
        data = json.dumps({**record, **elsewhere, "id": other, "state": "running"}).encode()
    path.write_bytes(data)
    return data


@pytest.mark.slow
@pytest.mark.parametrize("how", ["not-json", "wrong-types", "impostor"])
def test_abandon_force_cleans_a_corrupt_lane_and_nothing_else(repo: Path, how: str) -> None:
    write_config(repo)
    bad = run_lane(repo, "write bad.txt from the bad lane\n", lane_id="bad")
    other = run_lane(repo, "write other.txt from the other lane\n", lane_id="other")
    for lane in (bad, other):
        assert wait_state(repo, lane) == f"{lane} ready OK"
    git(own_folder(repo, bad), "add", "bad.txt")
    git(own_folder(repo, bad), "commit", "-qm", "work only the bad lane has")  # on no other branch
    other_record = (lane_dir(repo, other) / "lane.json").read_bytes()
    broken = corrupt(repo, bad, how, other)

    row = status(repo, bad)
    assert row["problem"] and f"`lanes-tui abandon {bad} --force`" in row["problem"]
    _one_line_error(cli(repo, "abandon", bad), f"lane {bad}: lane.json", f"lanes-tui abandon {bad} --force")
    assert own_folder(repo, bad).is_dir() and not kept_aside(repo, bad)  # refused: nothing touched

    done = cli(repo, "abandon", bad, "--force")
    assert done.returncode == 0, done.stderr
    (aside,) = kept_aside(repo, bad)
    assert aside.read_bytes() == broken and aside.stat().st_mode & 0o777 == 0o600  # nothing of it is lost
    assert done.stdout.startswith(f"abandoned {bad}: kept the corrupt record as {aside}; "
                                  f"worktree {own_folder(repo, bad)}; branch lane/{bad}; with 1 commit(s)"), done.stdout
    assert not own_folder(repo, bad).exists() and git(repo, "branch", "--list", f"lane/{bad}") == ""
    row = status(repo, bad)
    assert row["state"] == "abandoned" and row["problem"] is None
    assert row["state_reason"].startswith("abandoned by the lead; its lane.json was corrupt")
    assert row["worktree"] == str(own_folder(repo, bad))  # the derived folder, never the record's claim
    events = [json.loads(line) for line in (lane_dir(repo, bad) / "events.jsonl").read_text().splitlines()]
    assert events[-1]["state"] == "abandoned" and events[-1]["corrupt"] == aside.name
    # The other lane, named by the corrupt record, is untouched.
    assert (lane_dir(repo, other) / "lane.json").read_bytes() == other_record
    assert (own_folder(repo, other) / "other.txt").is_file() and git(repo, "branch", "--list", f"lane/{other}")
    assert status(repo, other)["state"] == "ready"
    _one_line_error(cli(repo, "abandon", bad, "--force"), "the lane is already abandoned")
    assert cli(repo, "abandon", other).returncode == 0
    assert git(repo, "worktree", "list").count("\n") == 0
    fsck_clean(repo)


@pytest.mark.slow
def test_abandon_force_stops_a_running_corrupt_lane(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "write asked.txt yes\nask --timeout 300 Go on?\n", lane_id="busy")
    wait_state(repo, lane, "waiting")
    assert [q["state"] for q in json.loads(cli(repo, "inbox", "--json").stdout)] == ["open"]
    (lane_dir(repo, lane) / "lane.json").write_text("{ not json")
    done = cli(repo, "abandon", lane, "--force")  # the autouse fixture: no process of the lane is left
    assert done.returncode == 0, done.stderr
    row = status(repo, lane)
    assert row["state"] == "abandoned" and row["problem"] is None, row
    assert row["result"] == "LANE-FAILED"  # the stopped supervisor wrote its own record back; it is kept
    assert [p.read_text() for p in kept_aside(repo, lane)] == ["{ not json"]
    assert not own_folder(repo, lane).exists() and git(repo, "branch", "--list", f"lane/{lane}") == ""
    (question,) = json.loads(cli(repo, "inbox", "--json").stdout)
    assert question["title"] == "Go on?" and question["state"] == "orphaned"  # no longer waits for the lead
    fsck_clean(repo)


@pytest.mark.slow
def test_abandon_force_of_a_corrupt_lane_touches_only_what_git_confirms(repo: Path, tmp_path: Path) -> None:
    write_config(repo)
    odd = run_lane(repo, "write mine.txt lane work\n", lane_id="odd")
    cloned = run_lane(repo, "write mine.txt lane work\n", lane_id="cloned")
    for lane in (odd, cloned):
        wait_state(repo, lane)
        (lane_dir(repo, lane) / "lane.json").write_text("[]")

    origin = lane_dir(repo, odd) / "origin.json"
    damaged = origin.read_text().replace('"created": ', '"created": 1')  # its digest no longer matches
    origin.write_text(damaged)
    _one_line_error(cli(repo, "abandon", odd), "lane.json is corrupt")  # without --force: refused, untouched
    assert own_folder(repo, odd).is_dir() and not kept_aside(repo, odd) and origin.read_text() == damaged
    # --force sets the damaged origin aside; then (with another root configured since) git's listing
    # places the worktree, as for a lane without an origin.
    config = repo / ".lanes" / "config.toml"
    config.write_text(config.read_text().replace(str(repo.parent / "worktrees"), str(tmp_path / "new-root")))
    done = cli(repo, "abandon", odd, "--force")
    assert done.returncode == 0 and f"worktree {own_folder(repo, odd)}; branch lane/{odd}" in done.stdout, done
    assert "set the damaged origin.json aside as origin.json.damaged-" in done.stdout
    assert [p.read_text() for p in lane_dir(repo, odd).glob("origin.json.damaged-*")] == [damaged]
    assert not own_folder(repo, odd).exists() and status(repo, odd)["state"] == "abandoned"

    # A folder git does not list as the lane's worktree is never removed: here a clone took its place.
    git(repo, "worktree", "remove", "--force", str(own_folder(repo, cloned)))
    clone = own_folder(repo, cloned)
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    (clone / "unsaved.txt").write_text("work in a clone\n")
    _one_line_error(cli(repo, "abandon", cloned, "--force"), "git does not list", "refusing to delete it")
    assert (clone / "unsaved.txt").is_file() and not kept_aside(repo, cloned)
    clone.rename(tmp_path / "moved-clone")  # out of the way: only the branch is left, and git confirms it
    done = cli(repo, "abandon", cloned, "--force")
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(f"; branch lane/{cloned}") and "; worktree " not in done.stdout, done.stdout
    assert (tmp_path / "moved-clone" / "unsaved.txt").is_file()
    assert status(repo, cloned)["state"] == "abandoned"
    assert git(repo, "branch", "--list", "lane/*") == "" and git(repo, "worktree", "list").count("\n") == 0
    fsck_clean(repo)
