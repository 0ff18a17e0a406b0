"""The radar's look at a lane's uncommitted work: what changed since its HEAD, cheaply, and as a commit.

Split from `git.radar`, which decides what conflicts: this part reads a worktree. `worktree_state`
is one porcelain status; `stat_digest` says whether the uncommitted files moved since the last look
without reading them; `snapshot_commit` turns them into a commit the radar can trial-merge, built
in a temporary index (`git.temp_index`) so the lane's own index and files are never touched.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.git.patches import large_files
from lanes_tui.engine.git.temp_index import files_tree

__all__ = ["SHA", "snapshot_commit", "stat_digest", "worktree_state"]

#: A full commit id (sha1 or sha256).
SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
#: The snapshot's author and committer: fixed, so the same work is always the same commit.
_SNAPSHOT_ENV = {
    "GIT_AUTHOR_NAME": "lanes-tui radar", "GIT_AUTHOR_EMAIL": "radar@lanes-tui.invalid",
    "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_NAME": "lanes-tui radar",
    "GIT_COMMITTER_EMAIL": "radar@lanes-tui.invalid", "GIT_COMMITTER_DATE": "@0 +0000",
    "GIT_LITERAL_PATHSPECS": "1",
}


def snapshot_commit(worktree: Path, head: str, dirty: list[str], lane_id: str) -> str:
    """HEAD plus the uncommitted work of `dirty`, as a commit nothing refers to; HEAD when nothing is dirty.

    Staged in a temporary index, so the lane's own index and files are never touched. A file over
    `git.patches.MAX_SHOWN_BYTES` keeps its committed version there: `git add` would read it whole
    (and store it), and an agent's 20 GB sparse file held every `status` for minutes.
    """
    if not dirty:
        return head
    large = large_files(worktree, dirty)
    present = [name for name in dirty if _inside_lexists(worktree, name) and name not in large]
    missing = sorted(set(dirty) - set(present) - set(large))
    tree = files_tree(worktree, head, present, missing, env=_SNAPSHOT_ENV)
    return os.fsdecode(run_git(worktree, "commit-tree", "--no-gpg-sign", tree, "-p", head, "-m",
                               f"lanes-tui radar: uncommitted work of lane {lane_id}", extra_env=_SNAPSHOT_ENV).stdout
                       ).strip()


def worktree_state(worktree: Path) -> tuple[str | None, list[str]]:
    """(HEAD, every uncommitted path: staged, unstaged, untracked) from one porcelain v2 status."""
    out = run_git(worktree, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--branch",
                  "--untracked-files=all", "--no-renames").stdout
    head: str | None = None
    names: list[str] = []
    source = False
    for item in out.split(b"\0"):
        if not item:
            continue
        text = os.fsdecode(item)
        if source:  # a rename's source path (not expected with --no-renames): changed as well
            names.append(text)
            source = False
        elif text.startswith("# branch.oid "):
            oid = text[len("# branch.oid "):]
            head = oid if SHA.fullmatch(oid) else None
        elif text[:2] == "1 ":
            names.append(text.split(" ", 8)[8])
        elif text[:2] == "2 ":
            names.append(text.split(" ", 9)[9])
            source = True
        elif text[:2] == "u ":
            names.append(text.split(" ", 10)[10])
        elif text[:2] == "? ":
            names.append(text[2:])
    return head, sorted(set(names))


def stat_digest(worktree: Path, names: list[str]) -> str:
    """A digest of the uncommitted files' kind, size, change time and inode (as git's index keeps them).

    Cheap enough for every look: nothing is read, so an agent's large new file costs one `lstat`.
    A content change that leaves all four alike is what git itself would miss too.
    """
    outer = hashlib.sha256()
    for name in names:
        _inside_lexists(worktree, name)  # refuses a name that would leave the worktree
        try:
            st = (worktree / name).lstat()
            facts = f"{st.st_mode} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino}"
        except OSError:
            facts = "missing"
        outer.update(os.fsencode(name) + b"\0" + facts.encode() + b"\n")
    return outer.hexdigest()


def _inside_lexists(worktree: Path, name: str) -> bool:
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts:
        raise LanesError(f"git named {name!r}, which is not inside the worktree")
    return os.path.lexists(worktree / rel)
