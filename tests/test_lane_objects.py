"""A contained lane's own object store (issue 29): the agent's `git add` works, nothing lanes-tui keeps
names an object that lives only there.

Real lanes here: a real agent process under the kernel's fence stages files with ordinary git (and
changes one again after staging), then lanes-tui's status, diff, radar snapshot, accept and abandon run
on that lane. After the lane's worktree (and with it its private store) is gone, `git fsck
--connectivity-only` on the repository must pass: every object a branch names is in the shared store.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.procs import landlock
from tests.conftest import git
from tests.helpers import cli, output, wait_for, wait_state
from tests.test_landlock import _lane_paths, _results, _rogue_config, _start

pytestmark = pytest.mark.skipif(not landlock.probe().available, reason="this kernel has no Landlock")

UNSET = ["env", "-u", "GIT_OBJECT_DIRECTORY", "-u", "GIT_ALTERNATE_OBJECT_DIRECTORIES"]


def _sh(name: str, script: str) -> dict[str, Any]:
    return {"kind": "run", "name": name, "argv": ["sh", "-c", script]}


def _blob(repo: Path, text: str) -> str:
    """The id of a blob of `text`, computed without writing it anywhere."""
    return subprocess.run(["git", "hash-object", "--stdin"], cwd=repo, input=text, capture_output=True, text=True,
                          check=True).stdout.strip()


def _in_shared_store(repo: Path, oid: str) -> bool:
    """Whether the repository itself (no alternate, no lane store) has the object."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "cat-file", "-e", oid], cwd=repo, env=env, capture_output=True,
                          check=False).returncode == 0


def _admin(repo: Path, lane: str) -> Path:
    return repo / ".git" / "worktrees" / lane


def _loose(repo: Path) -> set[str]:
    """The ids of the shared store's loose objects."""
    return {p.parent.name + p.name for p in (repo / ".git" / "objects").glob("??/*") if p.is_file()}


def _fsck(repo: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "fsck", "--connectivity-only", "--no-progress"], cwd=repo, env=env,
                          capture_output=True, text=True, check=False)


STAGING = [
    _sh("add new file", "printf 'hello\\n' > new.txt && git add new.txt"),
    _sh("add kept file", "printf 'staged\\n' > kept.txt && git add kept.txt"),
    _sh("change after staging", "printf 'more\\n' >> new.txt"),
    _sh("add tracked change", "printf '# edited\\n' >> calc.py && git add calc.py"),
    _sh("diff cached", "git diff --cached --stat && git status --short"),
    _sh("stash create", "git stash create"),
    _sh("commit", "git commit -qm 'agent commit'"),
    {"kind": "run", "name": "add without the variables",
     "argv": [*UNSET, "sh", "-c", "printf 'x\\n' > sneaky.txt && git add sneaky.txt"]},
    {"kind": "run", "name": "hash-object -w without the variables",
     "argv": [*UNSET, "git", "hash-object", "-w", "--stdin"], "input": "into the shared store\n"},
]


def _staged_lane(repo: Path, tmp_path: Path, slug: str) -> tuple[str, dict[str, dict[str, Any]]]:
    _rogue_config(repo, tmp_path)
    git(repo, "checkout", "-q", "-b", "prog")  # a programme branch: main is protected from accepts
    lane = _start(repo, slug, STAGING, check=True).stdout.strip().splitlines()[-1]
    wait_for(lambda: "ROGUE DONE" in output(repo, lane), timeout=120)
    wait_state(repo, lane)
    return lane, _results(repo, lane)


def test_the_agent_stages_into_its_own_store_and_accept_commits_the_files(repo: Path, tmp_path: Path) -> None:
    objects_before = _loose(repo)
    lane, results = _staged_lane(repo, tmp_path, "stager")
    for name in ("add new file", "add kept file", "change after staging", "add tracked change", "diff cached",
                 "stash create"):
        assert results[name]["ok"] is True, (name, results[name])
    assert "new.txt" in results["diff cached"]["detail"] and "kept.txt" in results["diff cached"]["detail"]
    # what needs a shared ref still fails; without the variables git falls back to the shared store: refused
    assert results["commit"]["ok"] is False
    for name in ("add without the variables", "hash-object -w without the variables"):
        assert results[name]["ok"] is False and "insufficient permission" in results[name]["detail"], results[name]
    # The shared store gained only what lanes-tui's own check wrote: the frozen work (issue 30), rehashed
    # from the files. Nothing the agent staged is there unless the freeze wrote the same content.
    frozen = git(repo, "rev-parse", f"refs/lanes-tui/frozen/{lane}")
    by_freeze = {line.split()[0] for line in git(repo, "rev-list", "--objects", frozen).splitlines()}
    added = _loose(repo) - objects_before
    assert added <= by_freeze, sorted(added - by_freeze)
    private = _admin(repo, lane) / "lane-objects"
    staged, kept = _blob(repo, "hello\n"), _blob(repo, "staged\n")
    assert (private / staged[:2] / staged[2:]).is_file() and (private / kept[:2] / kept[2:]).is_file()
    assert not _in_shared_store(repo, staged)  # staged, then changed: only the agent's store has it
    assert kept in by_freeze  # the same content as the file: the freeze hashed it from the worktree
    record = status_record(repo, lane)
    assert record["confinement"]["objects"] == str(private)

    # what lanes-tui shows of the lane
    shown = cli(repo, "diff", lane, check=True).stdout
    assert "+more" in shown and "+staged" in shown and "+# edited" in shown
    worktree, _ = _lane_paths(repo, lane)
    snapshot = _radar_snapshot(repo, lane, worktree)
    assert git(repo, "show", f"{snapshot}:new.txt") == "hello\nmore"
    assert git(repo, "show", f"{snapshot}:kept.txt") == "staged"
    assert _connected(repo, snapshot)  # every object of the snapshot is in the shared store

    (repo / "lead.txt").write_text("the lead moved on\n")  # the target moved: accept commits, then rebases
    git(repo, "add", "lead.txt")
    git(repo, "commit", "-qm", "lead work")
    done = cli(repo, "accept", lane, timeout=300)
    assert done.returncode == 0, done.stderr
    assert git(repo, "show", "prog:new.txt") == "hello\nmore"  # the file as it is, not as it was staged
    assert git(repo, "show", "prog:kept.txt") == "staged"
    assert git(repo, "show", "prog:calc.py").endswith("# edited")
    assert git(repo, "show", "prog:lead.txt") == "the lead moved on"
    assert not worktree.exists() and not _admin(repo, lane).exists()  # the private store went with it
    fsck = _fsck(repo)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert _in_shared_store(repo, kept)


def test_abandon_leaves_no_private_objects(repo: Path, tmp_path: Path) -> None:
    lane, results = _staged_lane(repo, tmp_path, "dropped")
    assert results["add new file"]["ok"] is True
    private = _admin(repo, lane) / "lane-objects"
    assert any(p.is_file() for p in private.rglob("*"))
    done = cli(repo, "abandon", lane, "--force")
    assert done.returncode == 0, done.stderr
    assert not _admin(repo, lane).exists()
    fsck = _fsck(repo)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def status_record(repo: Path, lane: str) -> dict[str, Any]:
    import json

    return dict(json.loads((repo / ".lanes" / "state" / "lanes" / lane / "lane.json").read_text()))


def _radar_snapshot(repo: Path, lane: str, worktree: Path) -> str:
    """The radar's snapshot of the lane's uncommitted work, made by lanes-tui's own code."""
    from lanes_tui.engine.git.harden import register_lane
    from lanes_tui.engine.git.radar_snapshot import snapshot_commit, worktree_state

    register_lane(repo, lane, worktree)
    head, dirty = worktree_state(worktree)
    assert head is not None and {"new.txt", "kept.txt", "calc.py"} <= set(dirty)
    return snapshot_commit(worktree, head, dirty, lane)


def _connected(repo: Path, commit: str) -> bool:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    listed = subprocess.run(["git", "rev-list", "--objects", "--missing=print", commit], cwd=repo, env=env,
                            capture_output=True, text=True, check=False)
    return listed.returncode == 0 and not any(line.startswith("?") for line in listed.stdout.splitlines())


def test_only_commands_that_write_nothing_see_the_private_store() -> None:
    from lanes_tui.engine.git.harden import read_command

    assert read_command(("--no-optional-locks", "--literal-pathspecs", "diff", "--name-status"))
    assert read_command(("-c", "core.quotePath=true", "diff", "base"))
    assert read_command(("status", "--porcelain=v2"))
    for args in (("add", "-A"), ("write-tree",), ("commit", "-q"), ("-c", "diff.x=y", "commit-tree", "t"),
                 ("read-tree", "HEAD"), ("rebase", "x"), ("update-ref", "a", "b"), ("stash",), ()):
        assert not read_command(args), args
