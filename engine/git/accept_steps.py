"""The git steps of an accept: commit the lane's work, rebase it, fast-forward the target.

`decisions.accept` decides, journals and recovers; these are the steps it journals, each one git
command or a few, on the lane's derived worktree (`git.lane_paths`) through `git.commands` (hardened:
no hook, filter or fsmonitor of a lane's runs). The target only ever moves by `fast_forward`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from lanes_tui.engine.git import watch
from lanes_tui.engine.git.checkouts import checkout_of
from lanes_tui.engine.git.commands import git_out, nul_list, run_git

__all__ = ["commit_worktree", "fast_forward", "keeps_changes", "rebase", "rebase_in_progress"]


def commit_worktree(worktree: Path, files: list[str], message: str, *, frozen: str | None = None,
                    hooks: Callable[[Path, str], str] | None = None) -> str:
    """Commit the lane's work (if anything changed); return HEAD.

    With `frozen` (the snapshot its check made before the gates, `git.frozen_work`, whose parent is HEAD)
    the temporary index is that snapshot's tree: exactly the frozen work, whatever the gates left in
    the worktree. Without it (a lane no gate ran in), exactly the changed files as they are in the
    worktree, staged in a temporary index from HEAD, where `git add` rehashes every file: the lane's own
    index is the agent's, and its entries may name objects only in the lane's private store
    (`lanes.confine`), which vanish with the worktree, or content the files no longer have. Afterwards
    the lane's index is set to the new HEAD, so a rebase finds it clean.

    `hooks` (accept's `commit_hooks.CommitHooks`) runs the repository's pre-commit and commit-msg hooks
    on that index and returns the message to commit, or raises HookRefused before anything is committed.
    """
    with tempfile.TemporaryDirectory(prefix="lanes-accept-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if frozen:
            run_git(worktree, "read-tree", f"{frozen}^{{tree}}", extra_env=env)
        else:
            run_git(worktree, "read-tree", "HEAD", extra_env=env)
        if files and not frozen:
            run_git(worktree, "add", "-A", "--", *files, extra_env=env)
        staged = run_git(worktree, "diff", "--cached", "--quiet", check=False, extra_env=env).returncode != 0
        if staged and hooks is not None:
            message = hooks(Path(env["GIT_INDEX_FILE"]), message)
        if staged:  # --no-verify: the hooks ran above, once, inside the lane's fence; git must not run them again
            run_git(worktree, "commit", "-q", "--no-verify", "-m", message, extra_env=env)
    if staged:  # not `reset`: it would read the old entries' blobs, which lanes-tui's git does not see
        run_git(worktree, "read-tree", "HEAD")
        run_git(worktree, "update-index", "-q", "--refresh", check=False)
    return git_out(worktree, "rev-parse", "HEAD")


def keeps_changes(worktree: Path, target_sha: str, lane_head: str) -> bool:
    """True when the rebased lane still differs from the target: a rebase drops a commit whose change
    the target already holds, so an empty difference means there is nothing of the lane's left."""
    return run_git(worktree, "diff", "--quiet", target_sha, lane_head, check=False).returncode != 0


def rebase(worktree: Path, onto: str) -> list[str] | None:
    """Rebase the lane onto `onto`; on conflict abort and return the conflicting files."""
    if run_git(worktree, "rebase", "-q", onto, check=False).returncode == 0:
        return None
    files = nul_list(run_git(worktree, "diff", "--name-only", "-z", "--diff-filter=U", check=False).stdout)
    run_git(worktree, "rebase", "--abort", check=False)
    return files or ["(git reported a failure without conflicting files)"]


def fast_forward(repo: Path, target: str, expected: str, new: str) -> None:
    """Move `target` from `expected` to `new`, only as a fast-forward, wherever it is checked out."""
    checkout = checkout_of(repo, target)
    if checkout is not None:
        run_git(checkout, "merge", "--ff-only", "-q", new,
                fix="the target changed under the accept; run the accept again")
    else:
        run_git(repo, "update-ref", "-m", f"lanes-tui accept {new[:10]}", f"refs/heads/{target}", new, expected,
                fix="the target changed under the accept; run the accept again")
    watch.record_accept(repo, target, expected, new)  # moved by an accept: not a warning (git.watch)


def rebase_in_progress(worktree: Path) -> bool:
    for name in ("rebase-merge", "rebase-apply"):
        path = Path(git_out(worktree, "rev-parse", "--git-path", name))
        if not path.is_absolute():
            path = worktree / path
        if path.exists():
            return True
    return False
