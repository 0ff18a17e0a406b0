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
from tests.helpers import cli, programme_with_origin, run_lane, wait_state, write_config

WORK = 'write calc.py "def add(a, b): return a + b  # {tag}"'


@pytest.fixture()
def programme(repo: Path, tmp_path: Path) -> Path:
    """`programme` checked out (main is protected) and pushed to a bare `origin` with its upstream."""
    return programme_with_origin(repo, tmp_path)


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


def test_finish_deletes_squashed_branches_lists_the_rest_and_holds_the_push_until_told(programme: Path,
                                                                                     tmp_path: Path) -> None:
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
    remote = tmp_path / "remote.git"
    pushed_before = git(tmp_path, "--git-dir", str(remote), "rev-parse", "programme")

    proc = cli(repo, "finish")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = proc.stdout.splitlines()
    assert f"abandoned {squashed}: its branch is merged (squash or cherry-pick) into programme" in lines, lines
    assert f"abandoned {picked}: its branch is merged (squash or cherry-pick) into programme" in lines, lines
    assert f"  removed branch lane/{squashed}" in lines and f"  removed worktree {picked_tree}" in lines, lines
    assert f"UNMERGED  {kept}" in proc.stdout and "LEFTOVERS: 1" in proc.stdout, proc.stdout
    # A leftover holds the push: the remote has not moved, and finish says why and how to push anyway.
    assert lines[-1] == "NOT-PUSHED: 1 leftover remains (listed above); push anyway with `--push-anyway`", lines
    assert "PUSHED programme" not in proc.stdout and "pushing programme" not in proc.stdout
    assert git(tmp_path, "--git-dir", str(remote), "rev-parse", "programme") == pushed_before
    branches = git(repo, "branch", "--list", "lane/*")
    assert f"lane/{kept}" in branches and f"lane/{squashed}" not in branches and f"lane/{picked}" not in branches
    record = lane_json(repo, squashed)
    assert record["state"] == "abandoned", record
    assert record["state_reason"] == "finish: its branch is merged (squash or cherry-pick) into programme; cleaned up"

    shown = cli(repo, "finish", "--json")
    data = json.loads(shown.stdout)
    assert shown.returncode == 1 and data["push"] is None and data["deleted"] == [] and data["lanes"] == []
    assert data["pushed"] is False and data["push_reason"].startswith("1 leftover remains"), data
    assert [(left["kind"], left["id"]) for left in data["leftovers"]] == [("UNMERGED", kept)], data

    anyway = cli(repo, "finish", "--push-anyway", "--json")
    data = json.loads(anyway.stdout)
    assert anyway.returncode == 1, "the leftover is still there"
    assert data["pushed"] is True and data["push_reason"] == "pushed programme to origin/programme", data
    assert data["push"]["line"] == "PUSHED programme -> origin/programme"
    assert git(tmp_path, "--git-dir", str(remote), "rev-parse", "programme") == git(repo, "rev-parse", "programme")
    assert "NOT-PUSHED: --no-push given" in cli(repo, "finish", "--no-push").stdout


def test_finish_names_every_lane_it_removes_and_why(programme: Path) -> None:
    repo = programme
    idle = run_lane(repo, "say nothing to do here", lane_id="idle")  # NO-CHANGES: its branch is where it began
    wait_state(repo, idle)
    done, _ = ready_lane(repo, "done", WORK.format(tag="done"))
    merged, merged_tree = ready_lane(repo, "merged", 'write merged.txt "merged by hand"')
    commit_in(merged_tree, "merge me")
    git(repo, "merge", "-q", "--ff-only", f"lane/{merged}")  # the lead fast-forwards it by hand
    accepted = cli(repo, "accept", done)
    assert accepted.returncode == 0, accepted.stderr
    sha = git(repo, "rev-parse", "programme")
    git(repo, "branch", f"lane/{done}", sha)  # the lead brought the accepted lane's branch back to look at it

    # The hand merge put lane/ commits on the target: the git watch would hold the push (another test's
    # subject), so this finish only cleans up.
    data = json.loads(cli(repo, "finish", "--json", "--no-push", check=True).stdout)
    assert {lane["id"]: (lane["action"], lane["reason"]) for lane in data["lanes"]} == {
        idle: ("abandoned", "it changed nothing (its branch has no commit of its own)"),
        merged: ("abandoned", "its branch is merged into programme"),
        done: ("removed", f"accepted, merged into programme at {sha[:10]}"),
    }, data["lanes"]
    by_id = {lane["id"]: lane for lane in data["lanes"]}
    assert by_id[done]["removed"] == [f"branch lane/{done}"] and by_id[done]["line"] == (
        f"removed {done}: accepted, merged into programme at {sha[:10]}")
    assert by_id[merged]["removed"] == [f"worktree {merged_tree}", f"branch lane/{merged}"]
    assert data["leftovers"] == [] and data["pushed"] is False and data["push_reason"] == "--no-push given", data
    assert lane_json(repo, idle)["state_reason"] == (
        "finish: it changed nothing (its branch has no commit of its own); cleaned up")


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
