"""A stamp of what the conflict radar reads from git besides the worktrees: branches, frozen work, worktrees.

The dashboard's radar looks every few seconds, and each look runs `git worktree list` and `git
for-each-ref` even when every lane is quiet (0.15 % of the dashboard's CPU at 20 lanes, and as much
again in the git processes: docs/benchmarks.md, B2). What those two print can change only when a file
under the repository's common git folder changes: a branch moves (a lane commits, the lead commits,
an accept merges: git writes the ref through a lock file and a rename, so the ref file gets a new
inode and its folder a new change time), a check freezes a lane's work (`refs/lanes-tui/frozen/`),
refs are packed, or a worktree is added, removed or switches
branch (`worktrees/<name>/HEAD`, `gitdir`). `ref_stamp` is those files' `stat`s, taken without
reading any of them; two equal stamps mean git would print the same.

It answers None (never skip) for what it cannot vouch for: a repository whose `.git` is not a folder
(the repository itself a linked worktree or a submodule) or any error other than a missing file. The
radar still asks git in full at least once a minute, so nothing it misses lasts longer than that.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: (path relative to the common git folder, inode, change time ns, size, is a folder)
Entry = tuple[str, int, int, int, bool]
Stamp = tuple[Entry, ...]

#: Files whose change can change a branch head or the worktree list; folders are walked.
_FILES = ("packed-refs",)
_TREES = ("refs/heads", "refs/lanes-tui", "reftable")


def ref_stamp(repo: Path) -> Stamp | None:
    """The stamp of `repo`'s branches and worktrees, or None when it cannot be trusted to show a change."""
    common = repo / ".git"
    try:
        if not common.is_dir() or (common / "commondir").exists():
            return None
        entries: list[Entry] = []
        for name in _FILES:
            _add(entries, common, name)
        for tree in _TREES:
            _walk(entries, common, tree)
        _worktrees(entries, common)
    except OSError:
        return None
    return tuple(entries)


def _add(entries: list[Entry], common: Path, relative: str) -> None:
    """One file's or folder's stat; a missing one is left out (its appearance changes the stamp)."""
    try:
        st = os.lstat(common / relative)
    except FileNotFoundError:
        return
    entries.append((relative, st.st_ino, st.st_ctime_ns, st.st_size, stat.S_ISDIR(st.st_mode)))


def _walk(entries: list[Entry], common: Path, relative: str) -> None:
    """A folder and everything under it, in a fixed order."""
    top = common / relative
    if not top.is_dir():
        return
    _add(entries, common, relative)
    for root, dirs, files in os.walk(top):
        dirs.sort()
        base = os.path.relpath(root, common)
        for name in sorted(files) + dirs:
            _add(entries, common, os.path.join(base, name))


def _worktrees(entries: list[Entry], common: Path) -> None:
    """The worktrees folder, and for each worktree the files `git worktree list` reads."""
    folder = common / "worktrees"
    if not folder.is_dir():
        return
    _add(entries, common, "worktrees")
    for name in sorted(os.listdir(folder)):
        for part in ("HEAD", "gitdir", "locked"):
            _add(entries, common, f"worktrees/{name}/{part}")
