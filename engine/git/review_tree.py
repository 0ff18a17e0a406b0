"""The reviewer's read-only view of a lane: a detached worktree at a snapshot of the lane's work.

The lane's work is mostly uncommitted (accept commits it), so the snapshot is a commit object made
through a temporary index (`GIT_INDEX_FILE`): the lane's own index, branch and files are never
touched, and the commit hangs on no ref (git's gc collects it). The worktree is checked out at that
commit, detached, in `<root>/<repo-key>/.review/<lane-id>`, outside the lane's folder, so nothing a
reviewer writes there reaches the lane; its files and folders lose their write bits, which stops an
honest reviewer running as an ordinary user (root ignores them: the lane's digest, compared before
and after, is what proves the lane untouched). Removal goes through `worktrees.remove_worktree`, with
all of its guards.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from lanes_tui.engine.core.ids import validate_lane_id
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.git.patches import large_files
from lanes_tui.engine.git.temp_index import files_tree
from lanes_tui.engine.git.worktrees import remove_worktree
from lanes_tui.engine.state.paths import repo_key

__all__ = ["REVIEW_FOLDER", "add_review_tree", "remove_review_tree", "review_tree_path", "snapshot_commit"]

#: The folder (per repository, under the worktree root) holding the review worktrees.
REVIEW_FOLDER = ".review"
_AUTHOR = {"GIT_AUTHOR_NAME": "lanes-tui", "GIT_AUTHOR_EMAIL": "lanes-tui@localhost",
           "GIT_COMMITTER_NAME": "lanes-tui", "GIT_COMMITTER_EMAIL": "lanes-tui@localhost"}
_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


def review_tree_path(root: Path, repo: Path, lane_id: str) -> Path:
    """Where a lane's review worktree goes: beside the lane worktrees, never inside one."""
    return root / repo_key(repo) / REVIEW_FOLDER / validate_lane_id(lane_id)


def snapshot_commit(worktree: Path, lane_id: str) -> str:
    """A commit of the worktree as it stands (tracked, staged, unstaged and untracked files; ignored
    ones not), parented on its HEAD, made in a temporary index so the lane's index is not touched.
    A changed file over `git.patches.MAX_SHOWN_BYTES` keeps its committed version (or stays out):
    `git add` would read and store it whole, and the reviewer's diff shows only its size anyway."""
    status = run_git(worktree, "--no-optional-locks", "status", "--porcelain=v1", "-z", "--no-renames",
                     "--untracked-files=all").stdout
    large = large_files(worktree, (os.fsdecode(e[3:]) for e in status.split(b"\0") if len(e) > 3))
    specs = [".", *(f":(exclude,literal){path}" for path in sorted(large))]
    tree = files_tree(worktree, "HEAD", specs, env=_AUTHOR)  # pathspec magic on: the excludes above
    return run_git(worktree, "commit-tree", tree, "-p", "HEAD", "-m", f"lanes-tui: review snapshot of {lane_id}",
                   extra_env=_AUTHOR).stdout.decode().strip()  # authored by lanes-tui: no identity needed


def add_review_tree(repo: Path, root: Path, lane_id: str, commit: str) -> Path:
    """Check `commit` out detached in the lane's review folder (a leftover one is removed first) and
    take the write bits off everything in it but its `.git` file."""
    path = review_tree_path(root, repo, lane_id)
    remove_review_tree(repo, root, lane_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    run_git(repo, "worktree", "add", "--detach", str(path), commit,
            fix="check `git worktree list` and the worktree root, then review again")
    _set_writable(path, False)
    return path


def remove_review_tree(repo: Path, root: Path, lane_id: str) -> None:
    """Remove the lane's review worktree if there is one (write bits back first, so git can)."""
    path = review_tree_path(root, repo, lane_id)
    if not os.path.lexists(path):
        with contextlib.suppress(Exception):
            run_git(repo, "worktree", "prune", check=False)
        return
    _set_writable(path, True)
    remove_worktree(repo, root, path, None)


def _set_writable(path: Path, writable: bool) -> None:
    for folder, dirs, files in os.walk(path, topdown=writable):
        if folder == str(path):
            dirs[:] = [d for d in dirs if d != ".git"]
            files = [f for f in files if f != ".git"]
        for name in [*files, *dirs]:
            _chmod(Path(folder) / name, writable)
    _chmod(path, writable)


def _chmod(path: Path, writable: bool) -> None:
    with contextlib.suppress(OSError):
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            return
        os.chmod(path, (mode | stat.S_IWUSR) if writable else (mode & ~_WRITE_BITS))
