"""The conflict radar's trial merges: `git merge-tree`, and when one need not run at all.

Split from `git.radar`, which decides what to compare: a trial merge writes objects and nothing else
(no worktree, index or ref moves), and `cannot_conflict` says when two sides cannot conflict whatever
their files hold, so a hundred ready lanes are not 4,950 git processes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from lanes_tui.engine.git.commands import first_line, nul_list, run_git

__all__ = ["Side", "cannot_conflict", "trial_merge"]

log = logging.getLogger(__name__)

#: One side of a merge as `cannot_conflict` needs it: the base its files are counted from, the files
#: that differ from that base, and whether any of them is a deletion (True when unknown).
Side = tuple[str, frozenset[str], bool]


def trial_merge(repo: Path, ours: str, theirs: str) -> tuple[str, ...] | None:
    """The files a merge of two commits would leave conflicted ((): clean; None: git could not try).

    `merge-tree --write-tree` writes the merged tree's objects and nothing else.
    """
    proc = run_git(repo, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, theirs,
                   check=False)
    if proc.returncode == 0:
        return ()
    if proc.returncode == 1:
        names = nul_list(proc.stdout)[1:]  # the merged tree's id first, then each conflicted file
        return tuple(dict.fromkeys(names)) or ("(git named no file)",)
    log.info("trial merge of %s and %s failed: %s", ours[:10], theirs[:10], first_line(proc.stderr))
    return None


def cannot_conflict(a: Side, b: Side) -> bool:
    """Whether merging two sides counted from the same base cannot conflict, so git need not try.

    A merge conflicts only where both sides touched something: the same path (content, add/add,
    modify/delete), a rename's source or target (a rename is a deletion and an addition), a folder
    the other side renamed away (every file of it deleted), or a file where the other side made a
    folder (or the other way round). So: the same base, no path in common, no path of one inside a
    path of the other, and no deletion on either side. Anything else is tried.
    """
    (base_a, files_a, deletes_a), (base_b, files_b, deletes_b) = a, b
    if base_a != base_b or not base_a or deletes_a or deletes_b or files_a & files_b:
        return False
    return not (_folders(files_a) & files_b or _folders(files_b) & files_a)


def _folders(files: Iterable[str]) -> set[str]:
    """Every folder that holds one of `files` ("a/b/c" → "a", "a/b")."""
    out: set[str] = set()
    for name in files:
        parts = name.split("/")
        out.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return out
