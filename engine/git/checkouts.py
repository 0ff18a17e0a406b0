"""What git says about the accept's target: where a branch is checked out, what is dirty there, ancestry.

Split from `decisions.accept_plan` (the plan's refusals) so the accept, `finish` and the CI follower
share these reads without importing the whole plan. Every call is `git.commands.run_git`: hardened,
argv only, output as bytes decoded with `os.fsdecode`.
"""

from __future__ import annotations

import os
from pathlib import Path

from lanes_tui.engine.git.commands import list_worktrees, nul_list, run_git

__all__ = ["checkout_of", "diff_names", "dirty_files", "is_ancestor", "target_commit"]


def target_commit(repo: Path, target: str) -> str:
    """The commit `refs/heads/<target>` names, or "" when there is no such branch."""
    proc = run_git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{target}^{{commit}}", check=False)
    return os.fsdecode(proc.stdout).strip() if proc.returncode == 0 else ""


def checkout_of(repo: Path, branch: str) -> Path | None:
    """The worktree (the lead's checkout, usually) where `branch` is checked out, if any."""
    for entry in list_worktrees(repo):
        if entry.branch == branch:
            return entry.path
    return None


def dirty_files(checkout: Path) -> list[str]:
    """Paths with uncommitted changes in a checkout (staged, unstaged, untracked), from porcelain -z."""
    out = run_git(checkout, "status", "--porcelain", "-z", "--untracked-files=all").stdout
    names = []
    items = nul_list(out)
    skip = False
    for item in items:
        if skip:
            skip = False
            continue
        status, name = item[:2], item[3:]
        names.append(name)
        if "R" in status or "C" in status:
            skip = True  # the next entry is the rename's source
    return names


def diff_names(repo: Path, a: str, b: str) -> list[str]:
    if not a or not b or a == b:
        return []
    return nul_list(run_git(repo, "diff", "--name-only", "-z", a, b).stdout)


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    return run_git(repo, "merge-base", "--is-ancestor", ancestor, descendant, check=False).returncode == 0
