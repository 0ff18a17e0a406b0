"""Read-only views of a lane's worktree for the dashboard: its diff and its worktree row."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.state.model import LaneRecord

MAX_DIFF_BYTES = 512 * 1024


def lane_diff(record: LaneRecord) -> str:
    """Everything the lane changed against its base: tracked changes plus new untracked files."""
    worktree = Path(record.worktree)
    if not worktree.is_dir():
        return f"(the worktree {worktree} is gone)"
    tracked = run_git(worktree, "diff", "--no-color", "--no-ext-diff", record.base_sha, check=False).stdout
    untracked = run_git(worktree, "ls-files", "--others", "--exclude-standard", "-z", check=False).stdout
    parts = [os.fsdecode(tracked)]
    for name in (os.fsdecode(n) for n in untracked.split(b"\0") if n):
        new = run_git(worktree, "diff", "--no-color", "--no-index", "--", "/dev/null", name, check=False).stdout
        parts.append(os.fsdecode(new))
    text = "".join(parts)
    if len(text) > MAX_DIFF_BYTES:
        text = text[:MAX_DIFF_BYTES] + f"\n… diff cut at {MAX_DIFF_BYTES // 1024} KiB …\n"
    return text or "(no changes yet)"


def worktree_row(repo: Path, record: LaneRecord) -> dict[str, Any]:
    worktree = Path(record.worktree)
    row: dict[str, Any] = {"lane": record.id, "path": str(worktree), "branch": record.branch,
                           "changed": 0, "ahead": 0, "behind": 0}
    if not worktree.is_dir():
        row["path"] += " (gone)"
        return row
    try:
        row["changed"] = len(worktrees.changed_files(worktree, record.base_sha))
        row["ahead"], row["behind"] = worktrees.ahead_behind(repo, record.branch, record.target_branch)
    except LanesError:
        pass
    return row
