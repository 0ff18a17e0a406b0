"""The lane's work is frozen before its gates (issue 30, item 2): real repositories, real sim lanes and
real gates (pytest writing `__pycache__` in a repository with no ignore rules). What the gates leave is
listed and never merged; scope, the empty-lane refusal, the review's diff, the radar and accept judge
the frozen work; the freeze touches neither the lane's index and HEAD nor the lead's index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions.lane_diff import lane_diff, work_digest
from lanes_tui.engine.git.frozen_work import frozen_ref, read_frozen_ref
from lanes_tui.engine.git.radar import radar_report
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.conftest import git
from tests.helpers import cli, ready_lane, run_lane, status, wait_state, write_config

PY = sys.executable


def _gates(*codes: str) -> str:
    """`[gates] commands`: each a `python -c CODE`, run in the worktree (no shell)."""
    import shlex

    return "commands = [" + ", ".join(json.dumps(f"{PY} -c {shlex.quote(code)}") for code in codes) + "]"


def packet(repo: Path, lane_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((repo / ".lanes/state/lanes" / lane_id / "packet.json").read_text())
    return data


def frozen_refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/lanes-tui/")


@pytest.fixture()
def python_project(repo: Path) -> Path:
    """A python package with tests, no ignore rules at all, on a programme branch; gates run pytest."""
    (repo / "pkg").mkdir()
    (repo / "pkg/__init__.py").write_text("VALUE = 2\n")
    (repo / "tests").mkdir()
    (repo / "tests/test_base.py").write_text("import pkg\n\n\ndef test_value():\n    assert pkg.VALUE == 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a package and its tests")
    git(repo, "checkout", "-q", "-b", "programme")
    assert not (repo / ".gitignore").exists()
    write_config(repo, gates="commands = " + json.dumps([f"{PY} -m pytest -q -p no:cacheprovider tests"]))
    return repo


def test_pytest_byproducts_are_listed_never_merged_and_two_lanes_do_not_conflict(python_project: Path) -> None:
    repo = python_project
    first = ready_lane(repo, "write pkg/one.py 'ONE = 1'\nwrite tests/test_one.py 'def test_one(): import pkg.one'\n",
                  "one")
    second = ready_lane(repo, "write pkg/two.py 'TWO = 2'\nwrite tests/test_two.py 'def test_two(): import pkg.two'\n",
                   "two")
    data = packet(repo, first)
    assert data["changed_files"] == ["pkg/one.py", "tests/test_one.py"], data["changed_files"]
    left = data["gate_files"]
    assert left and all("__pycache__/" in f and f.endswith(".pyc") for f in left), left
    assert any(f.startswith("tests/__pycache__/test_base.") for f in left), left  # the same name in both lanes
    assert data["frozen_sha"] == read_frozen_ref(repo, first)
    log = cli(repo, "check", first, "--log")
    assert "files the gates left, not merged" in log.stdout and "test_base." in log.stdout, log.stdout
    dry = cli(repo, "accept", first, "--dry-run")
    assert "files (2): pkg/one.py, tests/test_one.py" in dry.stdout and "not merged" in dry.stdout, dry.stdout

    assert cli(repo, "accept", first).returncode == 0
    accepted = cli(repo, "accept", second)  # rebased onto the first: no conflict on a .pyc
    assert accepted.returncode == 0, accepted.stderr
    merged = git(repo, "ls-tree", "-r", "--name-only", "programme").splitlines()
    assert not [f for f in merged if "__pycache__" in f], merged
    assert {"pkg/one.py", "pkg/two.py", "tests/test_one.py", "tests/test_two.py"} <= set(merged)
    assert frozen_refs(repo) == ""  # each lane's frozen ref went with its worktree


def test_a_scoped_lane_whose_gates_write_outside_its_scope_is_accepted(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")
    write_config(repo, gates=_gates("open('gate-report.txt', 'w').write('made by the gate')"))
    record = launch_lane(repo, load_config(repo), LaunchRequest(prompt="write src/a.py 'A = 1'\n", slug="scoped",
                                                                scope=("src/",)))
    wait_state(repo, record.id)
    assert status(repo, record.id)["state"] == "ready"
    data = packet(repo, record.id)
    assert data["outside_scope"] == [] and data["gate_files"] == ["gate-report.txt"], data
    accepted = cli(repo, "accept", record.id)
    assert accepted.returncode == 0, accepted.stderr
    assert git(repo, "ls-tree", "-r", "--name-only", "programme").splitlines() == ["README.md", "calc.py", "src/a.py"]


def test_a_lane_that_changed_nothing_is_not_accepted_for_what_its_gates_wrote(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")
    write_config(repo, gates=_gates("open('gate-report.txt', 'w').write('made by the gate')"))
    lane = run_lane(repo, "print 1\n", lane_id="idle")
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "NO-CHANGES"
    cli(repo, "check", lane)  # the lead's check: the gates run and write their file
    data = packet(repo, lane)
    assert data["changed_files"] == [] and data["gate_files"] == ["gate-report.txt"], data
    assert status(repo, lane)["state"] == "exited" and "NO-CHANGES" in status(repo, lane)["state_reason"]
    refused = cli(repo, "accept", lane, "--override", "merge it anyway")
    assert refused.returncode == 2 and "nothing to merge" in refused.stderr, refused.stderr
    assert git(repo, "rev-parse", "programme") == git(repo, "rev-parse", "main")


def test_a_gate_that_changes_a_tracked_file_does_not_reach_the_target(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")
    (repo / "other.txt").write_text("the target moves on\n")
    write_config(repo, gates=_gates("open('README.md', 'a').write('stamped by the gate\\n')"))
    lane = ready_lane(repo, "write README.md '# project, by the agent'\nwrite feature.txt new\n", "stamp")
    data = packet(repo, lane)
    assert data["changed_files"] == ["README.md", "feature.txt"] and data["gate_files"] == ["README.md"], data
    git(repo, "add", "other.txt")
    git(repo, "commit", "-q", "-m", "the programme moved")  # so the accept rebases (gate files put back first)
    accepted = cli(repo, "accept", lane)
    assert accepted.returncode == 0, accepted.stderr
    assert git(repo, "show", "programme:README.md") == "# project, by the agent"
    assert git(repo, "show", "programme:feature.txt") == "new"


def test_freeze_touches_neither_the_lanes_index_and_head_nor_the_leads_index(repo: Path) -> None:
    from lanes_tui.engine.git.frozen_work import freeze, gate_files
    from lanes_tui.engine.git.worktrees import create_worktree

    (repo / "staged.txt").write_text("base\n")
    git(repo, "add", "staged.txt")
    git(repo, "commit", "-q", "-m", "more")
    (repo / "calc.py").write_text("# the lead's own staged edit\n")
    git(repo, "add", "calc.py")  # the lead's index has something in it
    info = create_worktree(repo, repo.parent / "worktrees", "froz-a1")
    tree = info.path
    (tree / "staged.txt").write_text("staged by the agent\n")
    git(tree, "add", "staged.txt")
    (tree / "staged.txt").write_text("then changed again\n")  # the file, not the index, is the agent's work
    (tree / "README.md").unlink()
    (tree / "new.txt").write_text("untracked\n")
    lane_index = Path(git(tree, "rev-parse", "--path-format=absolute", "--git-path", "index"))
    before = (lane_index.read_bytes(), git(tree, "rev-parse", "HEAD"), git(tree, "status", "--porcelain"),
              (repo / ".git/index").read_bytes(), git(repo, "status", "--porcelain"))
    frozen = freeze(repo, tree, "froz-a1", 1, info.base_sha)
    after = (lane_index.read_bytes(), git(tree, "rev-parse", "HEAD"), git(tree, "status", "--porcelain"),
             (repo / ".git/index").read_bytes(), git(repo, "status", "--porcelain"))
    assert after == before
    assert frozen.files == ["README.md", "new.txt", "staged.txt"]
    assert git(repo, "rev-parse", frozen_ref("froz-a1")) == frozen.sha
    assert git(repo, "rev-parse", f"{frozen.sha}^") == info.base_sha
    assert git(repo, "show", f"{frozen.sha}:staged.txt") == "then changed again"
    assert git(repo, "log", "-1", "--format=%s", frozen.sha) == "lanes-tui snapshot of froz-a1 attempt 1"
    assert gate_files(tree, info.base_sha, frozen.tree) == []
    (tree / "made-by-gate.pyc").write_bytes(b"\0gate")
    (tree / "staged.txt").write_text("a gate rewrote it\n")
    assert gate_files(tree, info.base_sha, frozen.tree) == ["made-by-gate.pyc", "staged.txt"]


def test_accept_refuses_a_stale_or_missing_frozen_work_until_checked_again(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")
    write_config(repo)
    lane = ready_lane(repo, "write feature.txt v1\n", "stale")
    first = packet(repo, lane)["frozen_sha"]
    worktree = Path(status(repo, lane)["worktree"])
    (worktree / "feature.txt").write_text("v2, more work after the check\n")
    refused = cli(repo, "accept", lane)
    assert refused.returncode == 2 and "changed since its check" in refused.stderr
    assert cli(repo, "check", lane).returncode == 0  # a new check freezes the new work
    second = packet(repo, lane)["frozen_sha"]
    assert second != first and read_frozen_ref(repo, lane) == second
    git(repo, "update-ref", frozen_ref(lane), first)  # the ref and the packet disagree
    refused = cli(repo, "accept", lane)
    assert refused.returncode == 2 and "is not the one its packet names" in refused.stderr, refused.stderr
    assert f"run `lanes-tui check {lane}` again" in refused.stderr
    git(repo, "update-ref", "-d", frozen_ref(lane))
    refused = cli(repo, "accept", lane)
    assert refused.returncode == 2 and "is missing" in refused.stderr, refused.stderr
    assert cli(repo, "check", lane).returncode == 0
    assert cli(repo, "accept", lane).returncode == 0
    assert (repo / "feature.txt").read_text() == "v2, more work after the check\n"
    assert frozen_refs(repo) == ""


def test_abandon_drops_the_frozen_ref(repo: Path) -> None:
    write_config(repo)
    lane = ready_lane(repo, "write gone.txt x\n", "dropped")
    assert read_frozen_ref(repo, lane) is not None
    assert cli(repo, "abandon", lane).returncode == 0
    assert frozen_refs(repo) == ""


def test_the_review_diff_and_the_radar_see_the_frozen_work_only(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")
    # Both lanes' gates write the same file with different content: as their work it would conflict.
    write_config(repo, gates=_gates("import os; open('gate-report.txt', 'w').write(os.environ['LANES_LANE'])"))
    first = ready_lane(repo, "write a.txt from a\n", "ra")
    second = ready_lane(repo, "write b.txt from b\n", "rb")
    config = load_config(repo)
    frozen = packet(repo, first)["frozen_sha"]
    diff = lane_diff(repo, config, first, frozen=frozen)
    assert [f.path for f in diff.files] == ["a.txt"] and "+from a" in diff.text()
    assert [f.path for f in lane_diff(repo, config, first).files] == ["a.txt", "gate-report.txt"]  # the worktree
    worktree = Path(status(repo, first)["worktree"])
    assert work_digest(worktree, packet(repo, first)["base_sha"], frozen) == diff.digest
    report = radar_report(repo, [LaneStore(StatePaths(repo)).read(lane) for lane in (first, second)])
    assert report.of(first) == () and report.of(second) == (), report.conflicts


def test_git_fsck_is_clean_after_a_freeze(repo: Path) -> None:
    write_config(repo)
    ready_lane(repo, "write fsck.txt x\n", "fsck")
    proc = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
