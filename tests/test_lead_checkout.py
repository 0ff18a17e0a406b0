"""Lead checkout integrity (issue 9, item 6): a write outside a lane's worktree is reported, not hidden.

When a lane starts, its `origin.json` records the lead checkout (branch, HEAD, staged changes,
uncommitted files with their content, submodules); `check` and the accept plan compare it with the
checkout as it is now. It is a warning, never a refusal: the lead's own edits change it too.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import git

from lanes_tui.engine.git.lead_checkout import compare, snapshot, submodule_status
from tests.helpers import cli, run_lane, status, wait_state, write_config

WARNING = "the lead checkout CHANGED since lane"


@pytest.fixture()
def programme(repo: Path) -> Path:
    git(repo, "checkout", "-q", "-b", "programme")
    return repo


def ready_lane(repo: Path, lane_id: str) -> str:
    lane = run_lane(repo, f"write {lane_id}.txt work of {lane_id}\n", lane_id=lane_id)
    wait_state(repo, lane)
    assert status(repo, lane)["state"] == "ready"
    return lane


def test_a_write_into_the_lead_checkout_is_reported_by_check_and_accept(programme: Path) -> None:
    repo = programme
    write_config(repo)
    lane = ready_lane(repo, "leaky")
    origin = json.loads((repo / ".lanes/state/lanes/leaky-a1/origin.json").read_text())
    assert origin["lead_checkout"]["branch"] == "programme" and origin["lead_checkout"]["head"]
    # What an agent that escaped its worktree would do: a new file and an edit in the lead's checkout.
    (repo / "stray.txt").write_text("written by an agent\n")
    (repo / "README.md").write_text("# project, edited\n")

    checked = cli(repo, "check", lane)
    assert checked.returncode == 0, checked.stderr
    [line] = [x for x in checked.stdout.splitlines() if x.startswith("WARNING")]
    assert f"{WARNING} {lane} started" in line and "README.md" in line and "stray.txt" in line
    assert json.loads((repo / ".lanes/state/lanes/leaky-a1/packet.json").read_text())["warnings"]

    plan = cli(repo, "accept", lane, "--dry-run")
    assert plan.returncode == 0, plan.stdout  # a warning, not a refusal
    assert any(x.startswith("WARNING: " + WARNING) for x in plan.stdout.splitlines()), plan.stdout
    assert "REFUSED" not in plan.stdout
    done = cli(repo, "accept", lane)
    assert done.returncode == 0 and WARNING in done.stderr, done.stderr
    assert (repo / "leaky.txt").exists() and (repo / "stray.txt").exists()


def test_accepts_and_the_leads_commits_are_not_reported(programme: Path) -> None:
    repo = programme
    write_config(repo)
    first, second = ready_lane(repo, "one"), ready_lane(repo, "two")
    (repo / "notes.txt").write_text("the lead's notes\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "lead: notes")
    assert cli(repo, "accept", first).returncode == 0  # HEAD moves forward twice: normal work
    checked = cli(repo, "check", second)
    assert checked.returncode == 0 and "WARNING" not in checked.stdout, checked.stdout
    plan = cli(repo, "accept", second, "--dry-run")
    assert plan.returncode == 0 and "WARNING" not in plan.stdout, plan.stdout


# --- the snapshot itself -----------------------------------------------------------------------------

def test_snapshot_sees_staged_content_branch_and_rewound_head(repo: Path) -> None:
    (repo / "calc.py").write_text("dirty before the lane\n")
    before = snapshot(repo)
    assert compare(repo, before, snapshot(repo)) == []
    (repo / "calc.py").write_text("dirtier: same status letter, new content\n")
    assert compare(repo, before, snapshot(repo)) == ["uncommitted files changed: calc.py"]
    git(repo, "add", "calc.py")
    assert "its staged changes differ" in compare(repo, before, snapshot(repo))
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "reset", "-q")
    (repo / "calc.py").write_text("dirty before the lane\n")
    assert compare(repo, before, snapshot(repo)) == []
    git(repo, "stash", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "forward")
    forward = snapshot(repo)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    assert any("no longer contains" in c for c in compare(repo, forward, snapshot(repo)))
    git(repo, "checkout", "-q", "-b", "elsewhere")
    assert any("on branch elsewhere, not branch main" in c for c in compare(repo, forward, snapshot(repo)))
    assert compare(repo, None, snapshot(repo)) == []  # a lane from before snapshots: nothing to say


def test_snapshot_sees_submodules(repo: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    (lib / "lib.py").write_text("x = 1\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-q", "-m", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(repo, "commit", "-q", "-m", "add lib")
    before = snapshot(repo)
    git(repo / "lib", "commit", "-q", "--allow-empty", "-m", "moved inside the submodule")
    changes = compare(repo, before, snapshot(repo))
    assert any("submodules changed" in c for c in changes), changes


def test_without_a_gitlink_the_submodules_are_read_from_the_index(repo: Path, tmp_path: Path) -> None:
    """`submodule_status` skips `git submodule` (a shell script before git 2.43) when the index holds no
    gitlink, and prints what it would have printed; a gitlink only staged is seen all the same."""
    real = subprocess.run(["git", "submodule", "status", "--recursive"], cwd=repo, capture_output=True, check=True)
    assert submodule_status(repo) == real.stdout == b""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    git(lib, "commit", "-q", "--allow-empty", "-m", "lib")
    before = snapshot(repo)
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{git(lib, 'rev-parse', 'HEAD')},lib")
    real = subprocess.run(["git", "submodule", "status", "--recursive"], cwd=repo, capture_output=True, check=False)
    assert submodule_status(repo) == (real.stdout if real.returncode == 0 else b"unreadable") != b""
    assert any("submodules changed" in c for c in compare(repo, before, snapshot(repo)))
