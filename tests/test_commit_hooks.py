"""The repository's own commit hooks run at accept (issue 30, item 3): real repositories, real sim lanes,
real `#!/bin/sh` hooks written into the lead's hooks folder before the lane starts (the git snapshot
refuses a hooks folder that changed since)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.decisions.commit_hooks import hooks_folder, repository_hooks
from lanes_tui.engine.procs import landlock
from tests.conftest import git
from tests.helpers import cli, ready_lane, status, write_config


@pytest.fixture()
def programme(repo: Path) -> Path:
    """The lead works on a programme branch (main is protected by default)."""
    git(repo, "checkout", "-q", "-b", "programme")
    write_config(repo)
    return repo


def hook(folder: Path, name: str, body: str) -> Path:
    """A real hook: a shell script, executable, as a team keeps it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes/state/lanes" / lane


def packet(repo: Path, lane: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((lane_dir(repo, lane) / "packet.json").read_text())
    return data


def events(repo: Path, lane: str, kind: str) -> list[dict[str, Any]]:
    lines = (lane_dir(repo, lane) / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("type") == kind]


def hook_log(repo: Path, lane: str, name: str) -> str:
    return (lane_dir(repo, lane) / "gates" / f"hook-{name}.log").read_text()


# --- where the hooks are ------------------------------------------------------------------------------

def test_the_hooks_folder_is_the_leads(repo: Path, tmp_path: Path) -> None:
    assert hooks_folder(repo) == repo / ".git" / "hooks"  # git's default; its *.sample files are no hooks
    assert repository_hooks(repo, tmp_path / "wt") == []
    git(repo, "config", "core.hooksPath", ".githooks")
    assert hooks_folder(repo) == repo / ".githooks"  # relative: the lead checkout's copy, never a lane's
    elsewhere = tmp_path / "team-hooks"
    git(repo, "config", "core.hooksPath", str(elsewhere))
    assert hooks_folder(repo) == elsewhere
    hook(elsewhere, "commit-msg", "exit 0\n")
    hook(elsewhere, "pre-commit", "exit 0\n")
    (elsewhere / "pre-commit").chmod(0o644)  # not executable: git does not run it, nor do we
    assert repository_hooks(repo, tmp_path / "wt") == [("commit-msg", elsewhere / "commit-msg")]
    (elsewhere / "pre-commit").chmod(0o755)
    assert [name for name, _ in repository_hooks(repo, tmp_path / "wt")] == ["pre-commit", "commit-msg"]


# --- real lanes ---------------------------------------------------------------------------------------

def test_a_failing_pre_commit_hook_refuses_then_no_verify_with_a_reason_accepts(programme: Path) -> None:
    repo = programme
    hook(repo / ".git/hooks", "pre-commit", "echo 'secret scanner: AWS key in notes.txt' >&2\nexit 1\n")
    lane = ready_lane(repo, "write notes.txt key=AKIA0000\n", "scan")
    target = git(repo, "rev-parse", "programme")
    lane_head = git(Path(status(repo, lane)["worktree"]), "rev-parse", "HEAD")

    refused = cli(repo, "accept", lane)
    assert refused.returncode == 1, refused.stderr
    assert f"accept {lane} refused: the pre-commit hook failed (exit 1); nothing was committed" in refused.stderr
    assert "secret scanner: AWS key in notes.txt" in refused.stderr  # the hook's own output
    assert f"`lanes-tui recover {lane} --relaunch`" in refused.stderr and "--no-verify REASON" in refused.stderr
    assert git(repo, "rev-parse", "programme") == target  # nothing merged
    assert git(Path(status(repo, lane)["worktree"]), "rev-parse", "HEAD") == lane_head  # nothing committed
    assert status(repo, lane)["state"] == "ready"  # the lane is as it was
    assert not (lane_dir(repo, lane) / "accept.json").exists()  # no half-done accept left to roll back
    [event] = events(repo, lane, "hook")
    assert event["hook"] == "pre-commit" and event["status"] == "failed" and event["exit"] == 1
    assert "AWS key" in event["output_tail"]
    # `recover` hands the hook's output to the next attempt (its findings go into the relaunch prompt).
    found = cli(repo, "recover", lane, "--json")
    assert found.returncode == 0, found.stderr
    [failed] = json.loads(found.stdout)["findings"]["failed_gates"]
    assert failed["command"] == "pre-commit hook" and "AWS key" in failed["output_tail"]

    missing = cli(repo, "accept", lane, "--no-verify")
    assert missing.returncode == 2 and "--no-verify: expected one argument" in missing.stderr
    blank = cli(repo, "accept", lane, "--no-verify", "  ")
    assert blank.returncode == 2 and "--no-verify needs a reason" in blank.stderr
    assert git(repo, "rev-parse", "programme") == target

    ok = cli(repo, "accept", lane, "--no-verify", "a test key, not a secret")
    assert ok.returncode == 0, ok.stderr
    assert (repo / "notes.txt").read_text() == "key=AKIA0000\n"
    assert packet(repo, lane)["no_verify"] == "a test key, not a secret"
    accepted = [e for e in events(repo, lane, "state") if e.get("state") == "accepted"]
    assert accepted[-1]["no_verify"] == "a test key, not a secret"
    assert len(events(repo, lane, "hook")) == 1  # skipped: the hook did not run again


def test_hooks_see_exactly_the_lanes_staged_files_and_commit_msg_sets_the_message(programme: Path) -> None:
    repo = programme
    hook(repo / ".git/hooks", "pre-commit",
         'echo "cwd=$(pwd)"\necho "staged:"\ngit diff --cached --name-only\n'
         'echo "git-dir=$(git rev-parse --git-dir)"\n')
    hook(repo / ".git/hooks", "commit-msg", 'printf "\\nReviewed-by: the commit-msg hook\\n" >> "$1"\n')
    lane = ready_lane(repo, "write new.txt new\nwrite calc.py 'def add(a, b): return b + a'\n", "staged")
    worktree = Path(status(repo, lane)["worktree"])

    ok = cli(repo, "accept", lane, "-m", "add new.txt")
    assert ok.returncode == 0, ok.stderr
    text = hook_log(repo, lane, "pre-commit")
    assert f"cwd={worktree}" in text
    staged = text.split("staged:\n", 1)[1].split("git-dir=", 1)[0].split()
    assert staged == ["calc.py", "new.txt"]  # what is committed, nothing of the lead's or the gates'
    assert f"git-dir={repo / '.git/worktrees' / lane}" in text  # the lane's derived git dir
    message = git(repo, "log", "-1", "--format=%B", "programme")
    assert message.splitlines() == ["add new.txt", "", "Reviewed-by: the commit-msg hook"]
    assert [e["hook"] for e in events(repo, lane, "hook")] == ["pre-commit", "commit-msg"]


def test_a_relative_hooks_path_runs_the_lead_checkouts_copy_not_the_lanes(programme: Path) -> None:
    repo = programme
    hook(repo / ".githooks", "pre-commit", "echo 'the lead checkout hook ran'\nexit 0\n")
    git(repo, "add", ".githooks")
    git(repo, "commit", "-q", "-m", "team hooks")
    git(repo, "config", "core.hooksPath", ".githooks")
    script = ("write .githooks/pre-commit '#!/bin/sh'\n"
              "append .githooks/pre-commit 'echo the lane wrote this hook; exit 1'\nwrite feature.txt done\n")
    lane = ready_lane(repo, script, "relhooks")
    worktree = Path(status(repo, lane)["worktree"])
    assert os.access(worktree / ".githooks/pre-commit", os.X_OK)  # the lane's copy would run, and fail

    ok = cli(repo, "accept", lane)
    assert ok.returncode == 0, ok.stderr
    text = hook_log(repo, lane, "pre-commit")
    assert "the lead checkout hook ran" in text and "the lane wrote this hook" not in text
    assert (repo / "feature.txt").read_text() == "done\n"


def test_a_hook_that_reformats_is_refused_and_nothing_is_merged(programme: Path) -> None:
    repo = programme
    hook(repo / ".git/hooks", "pre-commit",
         "for f in $(git diff --cached --name-only); do\n"
         "  tr a-z A-Z < \"$f\" > \"$f.tmp\" && mv \"$f.tmp\" \"$f\" && git add \"$f\"\ndone\n")
    lane = ready_lane(repo, "write style.txt lower case\n", "fmt")
    worktree = Path(status(repo, lane)["worktree"])
    target = git(repo, "rev-parse", "programme")

    refused = cli(repo, "accept", lane)
    assert refused.returncode == 1
    assert f"accept {lane} refused: the pre-commit hook changed files: style.txt" in refused.stderr
    assert f"run `lanes-tui check {lane}` to judge them, then accept again" in refused.stderr
    assert git(repo, "rev-parse", "programme") == target and not (repo / "style.txt").exists()
    assert (worktree / "style.txt").read_text() == "LOWER CASE\n"  # left in the worktree, for check
    assert status(repo, lane)["state"] == "ready"
    assert events(repo, lane, "hook")[-1]["status"] == "changed-files"

    unjudged = cli(repo, "accept", lane)  # the worktree changed since its check: refused until checked
    assert unjudged.returncode == 2 and "changed since its check" in unjudged.stderr
    assert cli(repo, "check", lane).returncode == 0
    ok = cli(repo, "accept", lane)  # the hook has nothing left to change: the judged work is merged
    assert ok.returncode == 0, ok.stderr
    assert (repo / "style.txt").read_text() == "LOWER CASE\n"


@pytest.mark.skipif(not landlock.probe().available, reason=f"no Landlock here: {landlock.probe().reason}")
def test_a_hook_runs_inside_the_lanes_fence(programme: Path) -> None:
    repo = programme
    outside = repo / "written-by-a-hook.txt"
    hook(repo / ".git/hooks", "pre-commit",
         f"if echo pwned > '{outside}' 2>/dev/null; then echo WROTE-OUTSIDE; else echo BLOCKED; fi\n"
         'echo "tmp=$TMPDIR"\necho inside > "$TMPDIR/scratch" && echo TMP-OK\nexit 0\n')
    lane = ready_lane(repo, "write fenced.txt ok\n", "fence")

    ok = cli(repo, "accept", lane)
    assert ok.returncode == 0, ok.stderr
    text = hook_log(repo, lane, "pre-commit")
    assert "BLOCKED" in text and "WROTE-OUTSIDE" not in text and not outside.exists()
    assert "TMP-OK" in text and f"{lane}.hooks" in text  # a TMPDIR of its own, writable
    [fence] = [e for e in events(repo, lane, "confinement") if e.get("of") == "hooks"]
    assert fence["mechanism"].startswith("landlock")
