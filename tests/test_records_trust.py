"""Records are never trusted for paths or names, and config edits never wedge the repository (issue 9).

Real repositories and real sim lanes: a lane's `lane.json` is edited to point elsewhere, and every
command that deletes or runs work must refuse in one line and leave the other folder whole. The
unit tests at the end drive `git.lane_paths` directly on real worktrees for the cases a CLI cannot
reach cheaply (the origin's digest, git's witness).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import git

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.lane_paths import git_witness, locate_lane, read_origin, remove_lane_worktree
from lanes_tui.engine.state.paths import StatePaths, repo_key
from lanes_tui.engine.state.store import LaneStore
from tests.helpers import cli, run_lane, status, wait_state, write_config


@pytest.fixture()
def programme(repo: Path) -> Path:
    """The lead works on a programme branch (main is protected by default)."""
    git(repo, "checkout", "-q", "-b", "programme")
    return repo


def ready_lane(repo: Path, lane_id: str, script: str | None = None) -> str:
    lane = run_lane(repo, script or f"write {lane_id}.txt work of {lane_id}\n", lane_id=lane_id)
    wait_state(repo, lane)
    assert status(repo, lane)["state"] == "ready", status(repo, lane)
    return lane


def record_path(repo: Path, lane: str) -> Path:
    return repo / ".lanes/state/lanes" / lane / "lane.json"


def edit_record(repo: Path, lane: str, **changes: object) -> None:
    path = record_path(repo, lane)
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode != 0, proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("lanes-tui: ") and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def journal(repo: Path, lane: str) -> Path:
    return repo / ".lanes/state/lanes" / lane / "accept.json"


# --- a record pointed at someone else's folder ----------------------------------------------------

def test_record_pointing_at_another_lanes_worktree_is_refused(programme: Path) -> None:
    repo = programme
    write_config(repo)
    thief, victim = ready_lane(repo, "thief"), ready_lane(repo, "victim")
    victim_tree = Path(status(repo, victim)["worktree"])
    edit_record(repo, thief, worktree=str(victim_tree))
    before = git(repo, "rev-parse", "programme")

    one_line_error(cli(repo, "check", thief), "names worktree", "restore")
    one_line_error(cli(repo, "accept", thief), "refused", "names worktree", str(victim_tree))
    dry = cli(repo, "accept", thief, "--dry-run")
    assert dry.returncode == 2 and "REFUSED" in dry.stdout and "names worktree" in dry.stdout
    one_line_error(cli(repo, "abandon", thief, "--force"), "refusing to delete it")

    assert git(repo, "rev-parse", "programme") == before, "nothing was merged"
    assert not (repo / "victim.txt").exists()
    assert (victim_tree / "victim.txt").read_text() == "work of victim\n"
    assert git(repo, "branch", "--list", "lane/victim-a1") and git(repo, "branch", "--list", "lane/thief-a1")
    assert status(repo, victim)["state"] == "ready"
    # Restored, the lane is its own again and can be accepted.
    edit_record(repo, thief, worktree=str(victim_tree.parent / thief))
    assert cli(repo, "accept", thief).returncode == 0
    assert (repo / "thief.txt").exists() and (victim_tree / "victim.txt").exists()


def test_edited_branch_is_refused(programme: Path) -> None:
    repo = programme
    write_config(repo)
    lane = ready_lane(repo, "brn")
    git(repo, "branch", "keep-me")
    edit_record(repo, lane, branch="keep-me")
    before = git(repo, "rev-parse", "programme")
    one_line_error(cli(repo, "check", lane), "names branch 'keep-me'", "lane/brn-a1")
    one_line_error(cli(repo, "accept", lane), "names branch 'keep-me'")
    one_line_error(cli(repo, "abandon", lane, "--force"), "names branch", "refusing to delete it")
    assert git(repo, "rev-parse", "programme") == before
    assert git(repo, "branch", "--list", "keep-me") and git(repo, "branch", "--list", "lane/brn-a1")


def test_record_pointing_at_the_repository_deletes_nothing(programme: Path) -> None:
    repo = programme
    write_config(repo)
    lane = ready_lane(repo, "self")
    edit_record(repo, lane, worktree=str(repo))
    for args in (("check", lane), ("accept", lane), ("abandon", lane, "--force")):
        one_line_error(cli(repo, *args), "names worktree", str(repo))
    assert (repo / ".git").is_dir() and (repo / "README.md").exists() and (repo / "calc.py").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert status(repo, lane)["state"] == "ready"


def test_abandon_force_never_deletes_a_clone_under_a_broad_root(programme: Path, tmp_path: Path) -> None:
    repo = programme
    write_config(repo, lanes_extra='target_branch = "programme"\n')
    config = repo / ".lanes/config.toml"
    config.write_text(config.read_text().replace(str(repo.parent / "worktrees"), str(tmp_path)))  # broad
    lane = ready_lane(repo, "wide")
    assert Path(status(repo, lane)["worktree"]).parent.parent == tmp_path
    clone = tmp_path / "precious-clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    (clone / "unsaved.txt").write_text("uncommitted work\n")
    edit_record(repo, lane, worktree=str(clone))
    one_line_error(cli(repo, "abandon", lane, "--force"), "names worktree", "refusing to delete it")
    assert (clone / "unsaved.txt").read_text() == "uncommitted work\n" and (clone / ".git").is_dir()
    # The clone moved to the lane's own folder (after its worktree was removed by hand): git does not
    # list it as the lane's worktree, so it is still never removed.
    own = Path(str(tmp_path / repo_key(repo) / lane))
    git(repo, "worktree", "remove", "--force", str(own))
    clone.rename(own)
    edit_record(repo, lane, worktree=str(own))
    one_line_error(cli(repo, "abandon", lane, "--force"), "git does not list", "refusing to delete it")
    assert (own / "unsaved.txt").read_text() == "uncommitted work\n"


def test_id_inside_the_record_must_be_its_folders(programme: Path) -> None:
    repo = programme
    write_config(repo)
    lane, other = ready_lane(repo, "idx"), ready_lane(repo, "idy")
    edit_record(repo, lane, id=other)
    for args in (("check", lane), ("accept", lane), ("abandon", lane)):
        one_line_error(cli(repo, *args), lane, other)
    # `abandon --force` drops such a lane from its own id and origin (tests/test_abandon_corrupt.py): only its own.
    assert cli(repo, "abandon", lane, "--force").returncode == 0
    assert json.loads(record_path(repo, other).read_text())["id"] == other, "the other record is untouched"
    assert json.loads(record_path(repo, lane).read_text())["id"] == lane
    assert Path(status(repo, other)["worktree"]).is_dir() and git(repo, "branch", "--list", f"lane/{other}")


def test_root_in_the_record_must_match_the_origin(programme: Path, tmp_path: Path) -> None:
    repo = programme
    write_config(repo)
    lane = ready_lane(repo, "rooted")
    worktree = Path(status(repo, lane)["worktree"])
    fake_root = tmp_path / "elsewhere"
    edit_record(repo, lane, worktree_root=str(fake_root), worktree=str(fake_root / repo_key(repo) / lane))
    one_line_error(cli(repo, "accept", lane), "worktree root", "was created under")
    # origin.json edited to agree: its digest no longer matches, so it is not believed either.
    origin = repo / ".lanes/state/lanes" / lane / "origin.json"
    data = json.loads(origin.read_text())
    data.update(worktree_root=str(fake_root), worktree=str(fake_root / repo_key(repo) / lane))
    origin.write_text(json.dumps(data))
    one_line_error(cli(repo, "abandon", lane), "origin.json cannot be trusted", "digest")
    assert worktree.is_dir()
    # --force sets the damaged origin aside and takes nothing from the record: git places the lane's
    # own worktree, which goes; the folder the forged record and origin name is never touched.
    (fake_root / repo_key(repo) / lane).mkdir(parents=True)
    (fake_root / repo_key(repo) / lane / "keep.txt").write_text("not the lane's\n")
    done = cli(repo, "abandon", lane, "--force")
    assert done.returncode == 0 and f"worktree {worktree}; branch lane/{lane}" in done.stdout, done
    assert not worktree.exists() and (fake_root / repo_key(repo) / lane / "keep.txt").is_file()


# --- config edits between start and accept --------------------------------------------------------

def test_changed_worktree_root_applies_to_new_lanes_only(programme: Path, tmp_path: Path) -> None:
    repo = programme
    write_config(repo)
    old_root = repo.parent / "worktrees"
    keep, old = ready_lane(repo, "keep"), ready_lane(repo, "old")
    config = repo / ".lanes/config.toml"
    new_root = tmp_path / "new-trees"
    config.write_text(config.read_text().replace(str(old_root), str(new_root)))

    done = cli(repo, "accept", keep)
    assert done.returncode == 0, done.stderr
    assert (repo / "keep.txt").exists()
    assert not (old_root / repo_key(repo) / keep).exists() and not journal(repo, keep).exists()
    assert git(repo, "branch", "--list", "lane/keep-a1") == ""
    assert status(repo, keep)["state"] == "accepted"
    doctor = cli(repo, "doctor")
    assert "Traceback" not in doctor.stderr and "interrupted accept" not in doctor.stdout, doctor.stdout
    assert cli(repo, "wait", old, "--timeout", "5").returncode == 0

    abandoned = cli(repo, "abandon", old, "--force")
    assert abandoned.returncode == 0, abandoned.stderr
    assert not (old_root / repo_key(repo) / old).exists() and git(repo, "branch", "--list", "lane/old-a1") == ""
    new = run_lane(repo, "write new.txt new\n", lane_id="new")
    wait_state(repo, new)
    assert Path(status(repo, new)["worktree"]).parent.parent == new_root
    assert cli(repo, "accept", new).returncode == 0


def test_unfinishable_journal_is_reported_and_blocks_nothing_else(programme: Path) -> None:
    repo = programme
    write_config(repo)
    stuck, other = ready_lane(repo, "stuck"), ready_lane(repo, "other")
    crashed = cli(repo, "accept", stuck, env=dict(os.environ, LANES_TUI_CRASH_AT="cleanup:before"))
    assert crashed.returncode == -9 and journal(repo, stuck).exists()
    worktree = Path(json.loads(record_path(repo, stuck).read_text())["worktree"])
    git(repo, "worktree", "lock", "--reason", "the lead keeps it", str(worktree))

    shown = cli(repo, "status")
    assert shown.returncode == 0, shown.stderr
    [problem] = [line for line in shown.stdout.splitlines() if line.startswith("PROBLEM")]
    assert "lane stuck-a1" in problem and "locked" in problem and f"git worktree unlock {worktree}" in problem
    as_json = cli(repo, "status", "--json")
    assert as_json.returncode == 0 and {row["id"] for row in json.loads(as_json.stdout)} == {stuck, other}
    assert "stuck-a1" in as_json.stderr
    doctor = cli(repo, "doctor")
    assert doctor.returncode == 1 and "git worktree unlock" in doctor.stdout
    one_line_error(cli(repo, "accept", stuck), "cannot be finished", "git worktree unlock")
    # Other lanes go on: wait, accept, the engine's reconcile.
    assert cli(repo, "wait", other, "--timeout", "5").returncode == 0
    accepted = cli(repo, "accept", other)
    assert accepted.returncode == 0, accepted.stderr
    assert (repo / "other.txt").exists()
    from lanes_tui.engine.decisions.reconcile import reconcile

    reconcile(repo)
    # The fix named, the next status finishes the accept.
    git(repo, "worktree", "unlock", str(worktree))
    finished = cli(repo, "status")
    assert "PROBLEM" not in finished.stdout and not journal(repo, stuck).exists()
    assert status(repo, stuck)["state"] == "accepted" and not worktree.exists()
    assert (repo / "stuck.txt").exists()


# --- git.lane_paths on real worktrees ----------------------------------------------------------------

def test_git_is_the_second_witness(programme: Path, tmp_path: Path) -> None:
    repo = programme
    write_config(repo)
    lane = ready_lane(repo, "wit")
    store = LaneStore(StatePaths(repo))
    location = locate_lane(repo, lane, store.read(lane))
    assert location.origin is not None and read_origin(StatePaths(repo).lane(lane)) == location.origin
    assert git_witness(location) is not None
    # The lane's branch checked out in another folder: nothing is removed.
    git(location.worktree, "checkout", "-q", "--detach")
    with pytest.raises(LanesError, match="detached HEAD"):
        git_witness(location)
    elsewhere = tmp_path / "elsewhere"
    git(repo, "worktree", "add", "-q", str(elsewhere), "lane/wit-a1")
    with pytest.raises(LanesError, match="checked out in"):
        remove_lane_worktree(location)
    assert elsewhere.is_dir() and location.worktree.is_dir()
    git(repo, "worktree", "remove", "--force", str(elsewhere))
    git(location.worktree, "checkout", "-q", "lane/wit-a1")
    # Mid-rebase git lists the worktree as detached: still the lane's own (a rollback must reach it).
    (repo / f"{lane.split('-')[0]}.txt").write_text("the lead's version\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "conflicting")
    git(location.worktree, "add", "-A")
    git(location.worktree, "commit", "-q", "-m", "the lane's")
    rebase = subprocess.run(["git", "rebase", "programme"], cwd=location.worktree, capture_output=True)
    assert rebase.returncode != 0
    assert git_witness(location) is not None
    git(location.worktree, "rebase", "--abort")
    assert remove_lane_worktree(location)[0] == f"worktree {location.worktree}"
    assert not location.worktree.exists()


def test_lane_from_before_origins_is_located_by_git(programme: Path) -> None:
    repo = programme
    write_config(repo)
    lane = ready_lane(repo, "legacy")
    (repo / ".lanes/state/lanes" / lane / "origin.json").unlink()
    shutil.rmtree(repo / ".lanes/state/seals" / lane)  # a lane from before origins is from before seals too
    data = json.loads(record_path(repo, lane).read_text())
    data.pop("worktree_root")
    record_path(repo, lane).write_text(json.dumps(data))
    edit_record(repo, lane, worktree="/tmp")
    one_line_error(cli(repo, "accept", lane), "names worktree /tmp")
    edit_record(repo, lane, worktree=data["worktree"])
    assert cli(repo, "accept", lane).returncode == 0
    assert (repo / "legacy.txt").exists() and not Path(data["worktree"]).exists()


def test_finish_leaves_a_misplaced_lane_alone(programme: Path, tmp_path: Path) -> None:
    repo = programme
    write_config(repo)
    lane = run_lane(repo, "say nothing to merge\n", lane_id="idle")
    wait_state(repo, lane)
    worktree = Path(status(repo, lane)["worktree"])
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    edit_record(repo, lane, worktree=str(decoy))
    done = cli(repo, "finish")
    assert done.returncode == 1 and "MISPLACED" in done.stdout and "names worktree" in done.stdout, done.stdout
    assert worktree.is_dir() and decoy.is_dir()
    edit_record(repo, lane, worktree=str(worktree))
    assert f"removed worktree {worktree}" in cli(repo, "finish").stdout
    assert not worktree.exists()


async def test_runner_discard_refuses_before_stopping(programme: Path) -> None:
    from lanes_tui.engine.config.settings import load_config
    from lanes_tui.engine.decisions.runners import LocalRunner

    repo = programme
    write_config(repo)
    thief, victim = ready_lane(repo, "dthief"), ready_lane(repo, "dvictim")
    victim_tree = Path(status(repo, victim)["worktree"])
    edit_record(repo, thief, worktree=str(victim_tree))
    runner = LocalRunner(repo, load_config(repo))
    with pytest.raises(LanesError, match="names worktree"):
        await runner.discard(thief)
    assert victim_tree.is_dir() and git(repo, "branch", "--list", "lane/dvictim-a1")
    removed = await runner.discard(victim)
    assert removed == [f"worktree {victim_tree}", "branch lane/dvictim-a1"] and not victim_tree.exists()


def test_the_supervisor_runs_the_agent_only_in_the_derived_worktree(programme: Path) -> None:
    """A record edited before its supervisor starts cannot move the agent into the lead's checkout."""
    import sys

    from lanes_tui.engine.config.settings import load_config
    from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane

    write_config(programme)
    record = launch_lane(programme, load_config(programme),
                         LaunchRequest(prompt="write planted.txt agent was here\n", slug="moved"), detach=False)
    edit_record(programme, record.id, worktree=str(programme))
    proc = subprocess.run([sys.executable, "-m", "lanes_tui.engine.supervisor", "--repo", str(programme),
                           "--lane", record.id], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    row = status(programme, record.id)
    assert (row["state"], row["result"]) == ("exited", "LANE-FAILED"), row
    assert row["state_reason"].startswith("not started:") and "names worktree" in row["state_reason"], row
    assert not (programme / "planted.txt").exists()
    assert not (Path(record.worktree) / "planted.txt").exists()
