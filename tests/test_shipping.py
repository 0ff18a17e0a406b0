"""Shipping (issue 14, items 6 and 7): finish against a bare remote, the capped fetch, empty lanes, the hook.

Real sim lanes in real repositories, a bare repository in the temp folder as `origin`; `programme`
is pushed with its upstream set, as a lead's would be. Nothing here needs a network.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.helpers import cli, run_lane, wait_state, write_config

WORK = 'write calc.py "def add(a, b): return a + b  # {tag}"'


@pytest.fixture()
def programme(repo: Path, tmp_path: Path) -> Path:
    """`programme` checked out (main is protected) and pushed to a bare `origin` with its upstream."""
    git(repo, "checkout", "-q", "-b", "programme")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "programme")
    write_config(repo)
    return repo


def lane_json(repo: Path, lane_id: str) -> dict[str, str]:
    data: dict[str, str] = json.loads((repo / ".lanes/state/lanes" / lane_id / "lane.json").read_text())
    return data


def events(repo: Path, lane_id: str) -> list[dict[str, object]]:
    text = (repo / ".lanes/state/lanes" / lane_id / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def ready_lane(repo: Path, slug: str, script: str) -> tuple[str, Path]:
    lane_id = run_lane(repo, script, lane_id=slug)
    wait_state(repo, lane_id)
    return lane_id, Path(lane_json(repo, lane_id)["worktree"])


def commit_in(worktree: Path, message: str) -> None:
    git(worktree, "add", "-A")
    git(worktree, "commit", "-q", "-m", message)


def test_finish_deletes_squashed_branches_lists_the_rest_and_pushes(programme: Path, tmp_path: Path) -> None:
    repo = programme
    squashed, squashed_tree = ready_lane(repo, "squashed", WORK.format(tag="squashed"))
    kept, kept_tree = ready_lane(repo, "kept", 'write notes.txt "unmerged work"')
    picked, picked_tree = ready_lane(repo, "picked", 'write other.txt "picked by hand"')
    for tree, what in ((squashed_tree, "squash me"), (kept_tree, "keep me"), (picked_tree, "pick me")):
        commit_in(tree, what)
    # The lead squash-merges one lane by hand and removes its worktree (its branch stays behind) ...
    git(repo, "merge", "-q", "--squash", f"lane/{squashed}")
    git(repo, "commit", "-q", "-m", "squashed by hand")
    git(repo, "worktree", "remove", str(squashed_tree))
    # ... and cherry-picks another, whose worktree stays: both are merged by tree equality.
    git(repo, "cherry-pick", f"lane/{picked}")

    proc = cli(repo, "finish")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert f"branch lane/{squashed}" in proc.stdout and f"branch lane/{picked}" in proc.stdout, proc.stdout
    assert f"UNMERGED  {kept}" in proc.stdout and "LEFTOVERS: 1" in proc.stdout, proc.stdout
    assert "PUSHED programme -> origin/programme" in proc.stdout, proc.stdout
    branches = git(repo, "branch", "--list", "lane/*")
    assert f"lane/{kept}" in branches and f"lane/{squashed}" not in branches and f"lane/{picked}" not in branches
    remote = tmp_path / "remote.git"
    assert git(tmp_path, "--git-dir", str(remote), "rev-parse", "programme") == git(repo, "rev-parse", "programme")
    assert lane_json(repo, squashed)["state"] == "abandoned"

    shown = cli(repo, "finish", "--json", "--no-push")
    data = json.loads(shown.stdout)
    assert shown.returncode == 1 and data["push"] is None and data["deleted"] == []
    assert [(left["kind"], left["id"]) for left in data["leftovers"]] == [("UNMERGED", kept)], data


def test_an_offline_remote_carries_on_with_a_notice_and_the_push_fails(programme: Path, tmp_path: Path) -> None:
    repo = programme
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))  # offline: the remote is not there
    lane_id, _tree = ready_lane(repo, "offline", WORK.format(tag="offline"))
    notices = [str(e.get("text")) for e in events(repo, lane_id) if e.get("type") == "notice"]
    assert any(n.startswith("could not fetch origin/programme (") and n.endswith("using the last fetched state")
               for n in notices), notices
    accepted = cli(repo, "accept", lane_id)
    assert accepted.returncode == 0, accepted.stderr
    assert "could not fetch origin/programme" in accepted.stdout + accepted.stderr
    proc = cli(repo, "finish")
    assert proc.returncode == 1 and "PUSH-FAILED: " in proc.stdout, (proc.stdout, proc.stderr)
    assert "LEFTOVERS" not in proc.stdout


def test_a_target_behind_its_upstream_is_said(programme: Path, tmp_path: Path) -> None:
    repo = programme
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", "-b", "programme", str(tmp_path / "remote.git"), str(other))
    (other / "elsewhere.txt").write_text("pushed by someone else\n")
    git(other, "add", "-A")
    git(other, "-c", "user.name=x", "-c", "user.email=x@example.invalid", "commit", "-q", "-m", "elsewhere")
    git(other, "push", "-q", "origin", "programme")
    lane_id, _tree = ready_lane(repo, "behind", WORK.format(tag="behind"))
    accepted = cli(repo, "accept", lane_id, "--dry-run")
    assert "programme is 1 commit behind origin/programme" in accepted.stdout, accepted.stdout


def test_accept_refuses_a_lane_that_changed_nothing(programme: Path) -> None:
    repo = programme
    lane_id, _tree = ready_lane(repo, "idle", "say nothing to do here")
    assert lane_json(repo, lane_id)["result"] == "NO-CHANGES"  # never `ready`
    proc = cli(repo, "accept", lane_id)
    assert proc.returncode != 0
    assert "not ready (exited 0 and changed nothing)" in proc.stderr + proc.stdout
    proc = cli(repo, "accept", lane_id, "--override", "take it anyway")
    assert proc.returncode != 0
    assert f"nothing to merge: abandon it (`lanes-tui abandon {lane_id}`)" in proc.stderr + proc.stdout
    assert git(repo, "rev-parse", "programme") == git(repo, "rev-parse", "origin/programme")


def test_init_hooks_installs_a_pre_push_hook_that_runs_the_gates(programme: Path) -> None:
    repo = programme
    proc = cli(repo, "init", "--hooks")
    hook = repo / ".git" / "hooks" / "pre-push"
    assert proc.returncode == 0 and str(hook) in proc.stdout, proc.stderr
    assert hook.stat().st_mode & stat.S_IXUSR and "lanes-tui pre-push hook" in hook.read_text()
    again = cli(repo, "init", "--hooks")
    assert again.returncode != 0 and str(hook) in again.stderr and "--force" in again.stderr, again.stderr
    hook.write_text("#!/bin/sh\nexit 0\n")
    assert cli(repo, "init", "--hooks", "--force").returncode == 0 and "lanes-tui" in hook.read_text()

    # A failing gate stops the push of programme; a passing one lets it through.
    write_config(repo, gates='commands = ["{python} -c \\"raise SystemExit(3)\\""]')
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    git(repo, "commit", "-q", "-am", "swap")
    env = {**os.environ, "LANES_HEAVY_LOAD": "0", "PATH": os.path.dirname(sys.executable) + os.pathsep
           + os.environ.get("PATH", "")}
    stopped = subprocess.run(["git", "push", "-q", "origin", "programme"], cwd=repo, capture_output=True, text=True,
                             env=env, timeout=120, check=False)
    assert stopped.returncode != 0 and "gates failed" in stopped.stderr, stopped.stderr
    write_config(repo, gates='commands = ["{python} -c \\"pass\\""]')
    passed = subprocess.run(["git", "push", "-q", "origin", "programme"], cwd=repo, capture_output=True, text=True,
                            env=env, timeout=120, check=False)
    assert passed.returncode == 0, passed.stderr


def test_finish_pr_refuses_without_gh_or_its_login(programme: Path, tmp_path: Path) -> None:
    repo = programme
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git_dir = os.path.dirname(git(repo, "--exec-path"))
    no_gh = {**os.environ, "PATH": os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), "/usr/bin",
                                                     "/bin", git_dir])}
    if any(Path(d, "gh").exists() for d in no_gh["PATH"].split(os.pathsep)):
        pytest.skip("a real gh is on this machine's PATH")
    proc = cli(repo, "finish", "--pr", env=no_gh)
    assert proc.returncode != 0 and "gh is not installed" in proc.stderr, proc.stderr
    fake = bin_dir / "gh"
    fake.write_text("#!/bin/sh\necho 'You are not logged into any GitHub hosts.' >&2\nexit 1\n")
    fake.chmod(0o755)
    proc = cli(repo, "finish", "--pr", env=no_gh)
    assert proc.returncode != 0 and "gh is not logged in" in proc.stderr, proc.stderr
    fake.write_text("#!/bin/sh\ncase \"$1\" in auth) exit 0;; pr) echo https://example.invalid/pr/1;; esac\n")
    proc = cli(repo, "finish", "--pr", env=no_gh)
    assert proc.returncode == 0 and "PR https://example.invalid/pr/1" in proc.stdout, (proc.stdout, proc.stderr)
