"""A lane's HEAD set back on its branch after an agent detached and committed into its own store (issue 29).

The agent here is a real process under the kernel's fence, in a real lane (the hostile agent of
`test_landlock`): it detaches HEAD and commits (`git checkout --detach && git commit -am`), so the
worktree's HEAD, reflog and index name objects only its private store holds. After the run lanes-tui
must have put HEAD back on `lane/<id>`, dropped what named private objects, said so in an event, the
lane's reason and its packet, kept the files, and the lead's `git fsck` and `git gc --prune=now` must
pass while the worktree still exists; accept then commits the agent's files.

The repair itself is also run on plain git repositories with a private store made by hand (no kernel
needed): an interrupted rebase, a per-worktree ref, `status`'s narrower rule.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from lanes_tui.engine.procs import landlock
from tests.conftest import git
from tests.helpers import cli, output, status, wait_for, wait_state
from tests.test_landlock import _lane_paths, _results, _rogue_config, _start
from tests.test_lane_objects import _fsck, _in_shared_store

contained = pytest.mark.skipif(not landlock.probe().available, reason="this kernel has no Landlock")

DETACH_AND_COMMIT = [
    {"kind": "run", "name": "detach and commit",
     "argv": ["sh", "-c", "git checkout -q --detach && printf '# agent\\n' >> calc.py && printf 'new\\n' > fresh.txt "
                          "&& git add fresh.txt && git commit -qam 'agent commit' && echo SHA=$(git rev-parse HEAD)"]},
]


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def _gc(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "gc", "--prune=now", "--quiet"], cwd=repo, env=_clean_env(), capture_output=True,
                          text=True, check=False)


def _events(repo: Path, lane: str, kind: str) -> list[dict[str, object]]:
    path = repo / ".lanes" / "state" / "lanes" / lane / "events.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if row.get("type") == kind]


@contained
def test_a_detached_commit_of_the_agent_is_discarded_and_its_files_kept(repo: Path, tmp_path: Path) -> None:
    _rogue_config(repo, tmp_path)
    git(repo, "checkout", "-q", "-b", "prog")  # a programme branch: main is protected from accepts
    lane = _start(repo, "detacher", DETACH_AND_COMMIT, check=True).stdout.strip().splitlines()[-1]
    wait_for(lambda: "ROGUE DONE" in output(repo, lane), timeout=120)
    wait_state(repo, lane)
    result = _results(repo, lane)["detach and commit"]
    assert result["ok"] is True, result
    sha = result["detail"].split("SHA=")[1].split()[0]
    assert not _in_shared_store(repo, sha)  # the agent's commit lives only in the lane's own store

    worktree, _ = _lane_paths(repo, lane)
    admin = repo / ".git" / "worktrees" / lane
    assert worktree.is_dir()
    assert (admin / "HEAD").read_text().strip() == f"ref: refs/heads/lane/{lane}"
    assert sha not in (admin / "logs" / "HEAD").read_text() if (admin / "logs" / "HEAD").exists() else True
    # the lead's git works again while the lane's worktree is still there
    fsck = _fsck(repo)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    gc = _gc(repo)
    assert gc.returncode == 0, gc.stderr
    # the agent's files are as it left them
    assert (worktree / "calc.py").read_text().endswith("# agent\n")
    assert (worktree / "fresh.txt").read_text() == "new\n"
    # said: the event, the lane's reason (its attempt), its packet
    events = _events(repo, lane, "head-reattached")
    assert len(events) == 1 and events[0]["detached"] == sha and events[0]["private"] is True, events
    assert events[0]["index_reset"] is True and events[0]["reflog_dropped"]
    record = json.loads((repo / ".lanes" / "state" / "lanes" / lane / "lane.json").read_text())
    assert "commits were discarded" in record["providers_tried"][-1]["reason"]
    packet = json.loads((repo / ".lanes" / "state" / "lanes" / lane / "packet.json").read_text())
    assert any("commits were discarded" in w and "files are kept" in w for w in packet["warnings"]), packet
    assert status(repo, lane)["state"] == "ready"

    done = cli(repo, "accept", lane, timeout=300)
    assert done.returncode == 0, done.stderr
    assert git(repo, "show", "prog:fresh.txt") == "new"
    assert git(repo, "show", "prog:calc.py").endswith("# agent")
    fsck = _fsck(repo)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


# --- the repair on plain repositories (a private store made by hand, as `lanes.confine` sets it) --------

def _lane_repo(tmp_path: Path, lane: str = "l1") -> tuple[Path, Path, Path, dict[str, str]]:
    """A repository, a lane worktree on `lane/<id>` named after the lane, and the agent's git environment."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    worktree = tmp_path / "wt" / lane
    git(repo, "worktree", "add", "-q", str(worktree), "-b", f"lane/{lane}")
    admin = repo / ".git" / "worktrees" / lane
    (admin / "lane-objects").mkdir()
    env = {**_clean_env(), "GIT_OBJECT_DIRECTORY": str(admin / "lane-objects"),
           "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / ".git" / "objects")}
    return repo, worktree, admin, env


def _agent(worktree: Path, env: dict[str, str], *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=worktree, env=env, capture_output=True, text=True, check=check)
    return done.stdout.strip()


def test_an_interrupted_rebase_is_dropped_with_its_head(tmp_path: Path) -> None:
    from lanes_tui.engine.git.head_repair import repair_lane_head

    repo, worktree, admin, env = _lane_repo(tmp_path)
    _agent(worktree, env, "checkout", "-q", "--detach")
    (worktree / "a.txt").write_text("agent\n")
    _agent(worktree, env, "commit", "-qam", "agent")
    _agent(worktree, env, "update-ref", "refs/worktree/keep", "HEAD")  # a per-worktree ref: in the admin folder
    (worktree / "a.txt").write_text("conflict\n")
    _agent(worktree, env, "commit", "-qam", "conflict")
    _agent(worktree, env, "rebase", "-q", "HEAD~1", "--onto", "main", check=False)  # stops on the conflict
    assert (admin / "rebase-merge").is_dir() or (admin / "rebase-apply").is_dir()
    assert _gc(repo).returncode != 0  # the harm this repairs

    repair = repair_lane_head(repo, "l1", worktree)
    assert repair is not None and repair.index_reset and repair.reflog_dropped
    # the rebase stopped with HEAD on the shared `main`: after an agent run any HEAD off the branch goes back
    assert repair.reattached and not repair.private and "rebase-merge" in repair.cleared
    assert repair.refs_dropped == ["refs/worktree/keep"]
    assert not (admin / "rebase-merge").exists() and not (admin / "rebase-apply").exists()
    assert git(worktree, "symbolic-ref", "HEAD") == "refs/heads/lane/l1"
    assert _fsck(repo).returncode == 0 and _gc(repo).returncode == 0
    assert (worktree / "a.txt").read_text().startswith(("<<<<<<<", "conflict", "agent"))  # files untouched
    assert repair_lane_head(repo, "l1", worktree) is None  # nothing left to do


def test_status_moves_only_a_head_on_a_private_commit(tmp_path: Path) -> None:
    from lanes_tui.engine.git.head_repair import private_head, repair_lane_head

    repo, worktree, _admin, env = _lane_repo(tmp_path)
    git(worktree, "checkout", "-q", "--detach")  # a detached HEAD on a shared commit (an accept's rebase)
    assert private_head(repo, "l1") is None
    assert repair_lane_head(repo, "l1", worktree, only_private=True) is None
    assert git(worktree, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"  # left detached
    (worktree / "a.txt").write_text("agent\n")
    _agent(worktree, env, "commit", "-qam", "agent")
    sha = _agent(worktree, env, "rev-parse", "HEAD")
    assert private_head(repo, "l1") == sha
    repair = repair_lane_head(repo, "l1", worktree, only_private=True)
    assert repair is not None and repair.was == sha
    assert git(worktree, "symbolic-ref", "HEAD") == "refs/heads/lane/l1"
    assert (worktree / "a.txt").read_text() == "agent\n"
    assert _gc(repo).returncode == 0


def test_staging_into_the_private_store_is_reset_and_said(tmp_path: Path) -> None:
    from lanes_tui.engine.git.head_repair import repair_lane_head

    repo, worktree, _admin, env = _lane_repo(tmp_path)
    (worktree / "b.txt").write_text("staged\n")
    _agent(worktree, env, "add", "b.txt")
    assert _gc(repo).returncode != 0  # an index naming a private blob stops the lead's gc too
    repair = repair_lane_head(repo, "l1", worktree)
    assert repair is not None and not repair.reattached and repair.index_reset
    assert "staging was discarded" in repair.reason()
    assert _gc(repo).returncode == 0
    assert (worktree / "b.txt").read_text() == "staged\n"
    assert git(worktree, "status", "--porcelain") == "?? b.txt"


@contained
def test_status_sets_back_a_private_head_left_after_the_run(repo: Path, tmp_path: Path) -> None:
    """A HEAD moved after the supervisor's own look (by hand, or a supervisor that died): `status` repairs it."""
    _rogue_config(repo, tmp_path)
    lane = _start(repo, "later", [], check=True).stdout.strip().splitlines()[-1]
    wait_for(lambda: "ROGUE DONE" in output(repo, lane), timeout=120)
    wait_state(repo, lane)
    worktree, _ = _lane_paths(repo, lane)
    admin = repo / ".git" / "worktrees" / lane
    env = {**_clean_env(), "GIT_OBJECT_DIRECTORY": str(admin / "lane-objects"),
           "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / ".git" / "objects")}
    _agent(worktree, env, "checkout", "-q", "--detach")
    (worktree / "calc.py").write_text("# later\n")
    _agent(worktree, env, "commit", "-qam", "later")
    sha = _agent(worktree, env, "rev-parse", "HEAD")
    assert _gc(repo).returncode != 0
    status(repo, lane)
    assert (admin / "HEAD").read_text().strip() == f"ref: refs/heads/lane/{lane}"
    assert [e["detached"] for e in _events(repo, lane, "head-reattached")] == [sha]
    assert _gc(repo).returncode == 0
    assert (worktree / "calc.py").read_text() == "# later\n"
