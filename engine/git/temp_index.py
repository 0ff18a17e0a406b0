"""A tree built from a worktree's files in a temporary index: how lanes-tui stages a lane's work.

The freeze before the gates (`git.frozen_work`), the radar's look at uncommitted work (`git.radar_snapshot`)
and the review's snapshot (`git.review_tree`) all need the worktree as a tree without touching the
lane's own index (the agent's, whose entries may name objects only its private store has:
`lanes.confine`) or its HEAD. Each reads a base into a fresh `GIT_INDEX_FILE`, rehashes the files
from disk with `add -A`, drops the vanished ones, and writes the tree. One function, so a fix to how
paths are passed (NUL-separated, from stdin: no argv limit, no option injection) lands everywhere.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from lanes_tui.engine.git.commands import run_git

__all__ = ["files_tree", "nul_join"]


def nul_join(names: Iterable[str]) -> bytes:
    """Paths (or pathspecs) as git's `--pathspec-from-file=- --pathspec-file-nul` reads them."""
    return b"".join(os.fsencode(name) + b"\0" for name in names)


def files_tree(worktree: Path, base: str, present: Iterable[str], missing: Iterable[str] = (), *,
               env: Mapping[str, str] | None = None) -> str:
    """The tree of `base` with `present` rehashed from the worktree and `missing` removed.

    `env` is set over the temporary index (`GIT_LITERAL_PATHSPECS=1` for file names, an author for
    a commit built after); the index itself is gone when this returns.
    """
    present, missing = list(present), list(missing)
    with tempfile.TemporaryDirectory(prefix="lanes-index-") as tmp:
        extra = {**(env or {}), "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        run_git(worktree, "read-tree", base, extra_env=extra)
        if present:
            run_git(worktree, "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul",
                    stdin=nul_join(present), extra_env=extra)
        if missing:
            run_git(worktree, "rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                    "--pathspec-file-nul", stdin=nul_join(missing), extra_env=extra)
        return os.fsdecode(run_git(worktree, "write-tree", extra_env=extra).stdout).strip()
