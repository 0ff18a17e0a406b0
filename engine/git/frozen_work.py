"""The lane's work, frozen before its gates (issue 30, item 2): what every later decision judges.

Gates run in the lane's worktree, and what they leave there (`__pycache__/*.pyc` in a repository
without ignore rules, coverage files, snapshots, build outputs) is not the agent's work. So before a
check runs any gate, `freeze` records the worktree as the agent left it: a commit of HEAD plus every
changed file (tracked, staged, unstaged, untracked; ignored ones not), built in a temporary index
(`GIT_INDEX_FILE`: `read-tree HEAD`, `add -A`, `write-tree`, `commit-tree … -p HEAD`), exactly as an
accept builds its commit. The lane's own index, HEAD and files are never touched, nor the lead's index.

The commit hangs on `refs/lanes-tui/frozen/<lane-id>` (a namespace no branch listing, radar stamp or
push reads), so git's gc keeps it while the lane waits for the lead; the ref goes with the lane's
worktree (`lane_paths.remove_lane_worktree`: accept, abandon, finish). Scope, the empty-lane refusal,
the review, the radar and accept judge this commit; `gate_files` names what the gates changed on top
of it, which is listed and never merged.

A changed file over `MAX_HASHED_BYTES` (256 MiB) is left out of the snapshot (kept at HEAD's version):
`git add` would read and store it whole (an agent's 20 GB sparse file), so it is never merged; the
packet warns about it. Every git call is an argv list through `git.commands` (hardened), file names
are passed NUL-separated and literal (a file called `*` is that file).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import validate_lane_id
from lanes_tui.engine.core.sizes import format_bytes
from lanes_tui.engine.git.commands import nul_list, refuse_option, run_git
from lanes_tui.engine.git.patches import large_files
from lanes_tui.engine.git.worktrees import MAX_HASHED_BYTES, changed_files

__all__ = ["FROZEN_PREFIX", "FrozenWork", "drop_frozen_ref", "freeze", "frozen_problem", "frozen_ref",
           "gate_files", "read_frozen_ref", "restore_gate_files", "tree_names", "worktree_tree"]

FROZEN_PREFIX = "refs/lanes-tui/frozen/"
#: The snapshot's author and committer: lanes-tui, so a freeze needs no identity from the lead.
_AUTHOR = {"GIT_AUTHOR_NAME": "lanes-tui", "GIT_AUTHOR_EMAIL": "lanes-tui@localhost",
           "GIT_COMMITTER_NAME": "lanes-tui", "GIT_COMMITTER_EMAIL": "lanes-tui@localhost"}
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}


@dataclass(frozen=True)
class FrozenWork:
    """One freeze: the snapshot commit, its tree, the files it changes against the base, and the
    files left out for their size (path → bytes)."""

    sha: str
    tree: str
    files: list[str]
    left_out: dict[str, int] = field(default_factory=dict)

    def warnings(self) -> list[str]:
        """What the lead must know: files too large to freeze are never merged."""
        if not self.left_out:
            return []
        named = ", ".join(f"{p} ({format_bytes(s)})" for p, s in sorted(self.left_out.items())[:8])
        return [f"not frozen, never merged (over {format_bytes(MAX_HASHED_BYTES)}): {named}; commit such files by "
                "hand (or through git LFS)"]


def frozen_ref(lane_id: str) -> str:
    """The ref that keeps a lane's snapshot reachable."""
    return FROZEN_PREFIX + validate_lane_id(lane_id)


def worktree_tree(worktree: Path, base_sha: str) -> tuple[str, dict[str, int]]:
    """The tree of the worktree as it stands (HEAD plus every path that differs from `base_sha`),
    written from a temporary index; and the files left out for their size."""
    refuse_option(base_sha, "base commit")
    changed = changed_files(worktree, base_sha)
    large = large_files(worktree, changed, MAX_HASHED_BYTES)
    present = [p for p in changed if p not in large and _lexists(worktree, p)]
    missing = [p for p in changed if p not in large and p not in present]
    with tempfile.TemporaryDirectory(prefix="lanes-frozen-index-") as tmp:
        env = {**_LITERAL, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        run_git(worktree, "read-tree", "HEAD", extra_env=env)
        if present:  # rehashed from the files: the agent's own index may name objects only its store has
            run_git(worktree, "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul",
                    stdin=_nul_join(present), extra_env=env)
        if missing:
            run_git(worktree, "rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                    "--pathspec-file-nul", stdin=_nul_join(missing), extra_env=env)
        tree = os.fsdecode(run_git(worktree, "write-tree", extra_env=env).stdout).strip()
    return tree, large


def freeze(repo: Path, worktree: Path, lane_id: str, attempt: int, base_sha: str) -> FrozenWork:
    """Snapshot the worktree as a commit on its HEAD and point the lane's frozen ref at it."""
    tree, large = worktree_tree(worktree, base_sha)
    sha = os.fsdecode(run_git(worktree, "commit-tree", "--no-gpg-sign", tree, "-p", "HEAD", "-m",
                              f"lanes-tui snapshot of {lane_id} attempt {attempt}", extra_env=_AUTHOR).stdout).strip()
    run_git(repo, "update-ref", "-m", f"lanes-tui freeze {lane_id}", frozen_ref(lane_id), sha)
    return FrozenWork(sha=sha, tree=tree, files=tree_names(repo, base_sha, sha), left_out=large)


def tree_names(repo: Path, old: str, new: str) -> list[str]:
    """The paths that differ between two commits or trees (`diff-tree`, no renames: both paths of a move)."""
    refuse_option(old, "commit")
    refuse_option(new, "commit")
    out = run_git(repo, "diff-tree", "-r", "--name-only", "-z", "--no-renames", old, new, "--").stdout
    return sorted(set(nul_list(out)))


def gate_files(worktree: Path, base_sha: str, frozen_tree: str) -> list[str]:
    """The files that appeared or changed in the worktree since the freeze: the gates' (never merged)."""
    after, _ = worktree_tree(worktree, base_sha)
    return tree_names(worktree, frozen_tree, after) if after != frozen_tree else []


def read_frozen_ref(repo: Path, lane_id: str) -> str | None:
    """The commit the lane's frozen ref names, or None when there is none."""
    proc = run_git(repo, "rev-parse", "--verify", "--quiet", frozen_ref(lane_id) + "^{commit}", check=False)
    return os.fsdecode(proc.stdout).strip() or None if proc.returncode == 0 else None


def drop_frozen_ref(repo: Path, lane_id: str) -> None:
    """Delete the lane's frozen ref (its snapshot then goes with git's next gc); none is fine."""
    with contextlib.suppress(LanesError):
        if read_frozen_ref(repo, lane_id) is not None:
            run_git(repo, "update-ref", "-d", frozen_ref(lane_id), check=False)


def frozen_problem(repo: Path, worktree: Path, lane_id: str, frozen_sha: str) -> str | None:
    """Why the packet's snapshot is not the one to merge, or None when it is.

    The ref must name it, and it must sit on the lane's HEAD: its parent is HEAD, or HEAD is a commit of
    the same tree on the same parent (an interrupted accept committed it already).
    """
    current = read_frozen_ref(repo, lane_id)
    if current is None:
        return f"its frozen work ({frozen_ref(lane_id)}) is missing"
    if current != frozen_sha:
        return f"its frozen work ({frozen_ref(lane_id)} at {current[:10]}) is not the one its packet names " \
               f"({frozen_sha[:10]})"
    head = _rev(worktree, "HEAD")
    parent = _rev(repo, f"{frozen_sha}^")
    if head is None or parent is None:
        return f"its frozen work {frozen_sha[:10]} or the lane's HEAD cannot be read"
    if parent == head:
        return None
    if _rev(worktree, "HEAD^") == parent and _rev(worktree, "HEAD^{tree}") == _rev(repo, f"{frozen_sha}^{{tree}}"):
        return None
    return f"the lane's HEAD ({head[:10]}) moved since its work was frozen ({frozen_sha[:10]})"


def restore_gate_files(worktree: Path, frozen_sha: str, files: list[str]) -> list[str]:
    """Put the gates' files back as the snapshot has them: a file the snapshot holds is checked out
    from it, one it does not hold is deleted (with folders left empty). Returns what was deleted.

    Run before an accept rebases, once the lane's HEAD and index are the snapshot's commit: a `.pyc`
    the gates left would stop the rebase, and it is not the agent's work."""
    root = worktree.resolve()
    held = set(nul_list(run_git(worktree, "ls-tree", "-r", "-z", "--name-only", frozen_sha, "--").stdout))
    keep = [f for f in files if f in held]
    if keep:
        run_git(worktree, "checkout", frozen_sha, "--pathspec-from-file=-", "--pathspec-file-nul",
                stdin=_nul_join(keep), extra_env=_LITERAL)
    deleted = []
    for name in files:
        if name in held:
            continue
        path = _inside(root, name)
        if os.path.lexists(path) and not (path.is_dir() and not path.is_symlink()):
            path.unlink()
            deleted.append(name)
        for folder in path.parents:  # the `__pycache__` the gates made, once empty
            if folder == root or not _is_under(folder, root):
                break
            try:
                folder.rmdir()
            except OSError:
                break
    return deleted


def _rev(cwd: Path, rev: str) -> str | None:
    proc = run_git(cwd, "rev-parse", "--verify", "--quiet", rev, check=False)
    return os.fsdecode(proc.stdout).strip() or None if proc.returncode == 0 else None


def _inside(root: Path, name: str) -> Path:
    rel = Path(name)
    if not name or rel.is_absolute() or ".." in rel.parts:
        raise LanesError(f"git named {name!r}, which is not inside the worktree")
    return root / rel


def _is_under(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _lexists(worktree: Path, name: str) -> bool:
    return os.path.lexists(_inside(worktree, name))


def _nul_join(names: list[str]) -> bytes:
    return b"".join(os.fsencode(name) + b"\0" for name in names)
