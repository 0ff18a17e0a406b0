"""Lane worktrees: create, inspect and remove the `lane/<id>` worktrees of a repository.

Every git call is an argv list run with `subprocess` (never a shell; the runner is `git.commands`),
so a lane id, a path or a branch name can never be read as shell syntax. GitPython is not used here
(only `git.views` reads with it, for the dashboard): the detached supervisor imports this module and
must start quickly. Every git failure becomes a `LanesError` carrying git's first stderr line and
what to do next. Removal is guarded twice over (inside the worktree
root, and only `lane/` branches), because abandon and finish delete things on the lead's disk.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.digest import content_hasher, sha256_hex
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import BRANCH_PREFIX, branch_for, validate_lane_branch
from lanes_tui.engine.core.repo import find_repo_root  # the one repository-root function
from lanes_tui.engine.git.commands import DEFAULT_FIX, GIT_TIMEOUT_S, NOT_A_REPO_FIX, WorktreeEntry
from lanes_tui.engine.git.commands import branch_exists as _branch_exists
from lanes_tui.engine.git.commands import first_line as _first_line
from lanes_tui.engine.git.commands import git_out as _out
from lanes_tui.engine.git.commands import list_worktrees as _list_worktrees
from lanes_tui.engine.git.commands import nul_list as _nul_list
from lanes_tui.engine.git.commands import refuse_option as _refuse_option
from lanes_tui.engine.git.commands import run_git as _git
from lanes_tui.engine.state.paths import inside, worktree_path

# The git runner lives in git.commands; its helpers keep their old private names here so this
# module's code (and anything written against it) reads as before.
__all__ = [
    "DEFAULT_FIX", "GIT_TIMEOUT_S", "NOT_A_REPO_FIX", "WorktreeEntry", "WorktreeInfo", "ahead_behind",
    "changed_files", "check_worktree_root", "create_worktree", "current_branch", "describe_path", "find_repo_root",
    "is_dirty",
    "list_lane_worktrees", "remove_worktree", "rev_parse", "unique_commits", "worktree_digest",
]


@dataclass(frozen=True)
class WorktreeInfo:
    """A freshly created lane worktree and where it started from.

    `base_ref` is the local branch the lane was cut from (the natural accept target), or None when
    the base was a detached HEAD, a tag, a remote branch or a raw commit.
    """

    path: Path
    branch: str
    base_sha: str
    base_ref: str | None


def current_branch(repo: Path) -> str | None:
    """The branch checked out in `repo`, or None on a detached HEAD."""
    proc = _git(repo, "symbolic-ref", "--quiet", "HEAD", check=False)
    if proc.returncode == 1:
        return None
    if proc.returncode != 0:
        raise LanesError(f"cannot read HEAD of {repo}: {_first_line(proc.stderr)}", DEFAULT_FIX)
    ref = os.fsdecode(proc.stdout).strip()
    return ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else None


def rev_parse(repo: Path, rev: str) -> str:
    """The full sha of the commit `rev` names (tags are peeled to their commit)."""
    _refuse_option(rev, "revision")
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if proc.returncode != 0:
        raise LanesError(f"unknown revision {rev!r} in {repo}", "name an existing branch, tag or commit")
    return os.fsdecode(proc.stdout).strip()


def check_worktree_root(repo: Path, worktree_root: Path) -> None:
    """Refuse a worktree root inside the repository: lanes would show up as untracked files there,
    `git add -A` would sweep them into commits, and removal could reach the lead's own files."""
    if inside(worktree_root, repo):
        raise LanesError(
            f"worktree root {worktree_root} is inside the repository {repo}",
            "set [lanes] worktree_root to a folder outside the repository",
        )


def _base_ref(repo: Path, base: str | None) -> str | None:
    if base is None or base == "HEAD":
        return current_branch(repo)
    name = base[len("refs/heads/"):] if base.startswith("refs/heads/") else base
    return name if _branch_exists(repo, name) else None


def create_worktree(repo: Path, worktree_root: Path, lane_id: str, base: str | None = None) -> WorktreeInfo:
    """Create `lane/<id>` at `base` (default HEAD) checked out in its own folder under the root.

    Refuses before touching anything if the branch or the folder already exists, so an old lane's
    work is never overwritten. If git fails half-way, whatever it created is removed again.
    """
    repo = repo.resolve()
    worktree_root = worktree_root.expanduser().resolve()
    branch = branch_for(lane_id)
    check_worktree_root(repo, worktree_root)
    path = worktree_path(worktree_root, repo, lane_id)
    base_sha = rev_parse(repo, base or "HEAD")
    base_ref = _base_ref(repo, base)
    if _branch_exists(repo, branch):
        raise LanesError(f"branch {branch} already exists", f"abandon lane {lane_id} first or use a new id")
    if os.path.lexists(path):
        raise LanesError(f"worktree folder {path} already exists", f"abandon lane {lane_id} or remove it")
    parent_existed = path.parent.exists()
    proc = _git(repo, "worktree", "add", "--quiet", "-b", branch, str(path), base_sha, check=False)
    if proc.returncode != 0:
        _undo_create(repo, worktree_root, path, branch, base_sha, parent_existed)
        raise LanesError(
            f"git worktree add failed for lane {lane_id}: {_first_line(proc.stderr)}",
            f"check that {worktree_root} is writable and has space, then start the lane again",
        )
    return WorktreeInfo(path=path, branch=branch, base_sha=base_sha, base_ref=base_ref)


def _undo_create(repo: Path, root: Path, path: Path, branch: str, base_sha: str,
                 parent_existed: bool) -> None:
    """Best-effort removal of what a failed `worktree add` left; never touches another lane's work."""
    registered = {e.path.resolve() for e in _list_worktrees(repo)}
    if os.path.lexists(path) and path.resolve() not in registered and inside(path, root):
        _rmtree(path)
    _git(repo, "worktree", "prune", check=False)
    head = _git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    if head.returncode == 0 and os.fsdecode(head.stdout).strip() == base_sha:
        # `branch -D` refuses a branch checked out anywhere, so a racing creator keeps its lane.
        _git(repo, "branch", "-D", branch, check=False)
    if not parent_existed:
        with contextlib.suppress(OSError):
            path.parent.rmdir()


def changed_files(worktree: Path, base_sha: str) -> list[str]:
    """Every path that differs anywhere between `base_sha` and the worktree as it stands.

    The union of commits since base, the index and the working tree (untracked included, ignored
    not), so accept stages exactly these paths and a revert in the working tree is not missed.
    """
    _refuse_option(base_sha, "base commit")
    files: set[str] = set()
    committed = _git(worktree, "diff", "--name-only", "-z", "--no-renames", base_sha, "HEAD", "--")
    files.update(_nul_list(committed.stdout))
    status = _git(worktree, "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all")
    for entry in status.stdout.split(b"\0"):
        if len(entry) > 3:
            files.add(os.fsdecode(entry[3:]))
    return sorted(files)


def worktree_digest(worktree: Path, files: Iterable[str]) -> str:
    """A sha256 over each path's name, kind and content, in sorted order.

    Recorded by the gate check and recomputed by accept: any edit, chmod, new symlink target or
    deletion since the check changes it. Symlinks are never followed, and a path that would leave
    the worktree is refused, so a hostile file list cannot read outside it.
    """
    root = worktree.resolve()
    outer = content_hasher()
    for name in sorted(set(files)):
        rel = Path(name)
        if not name or rel.is_absolute() or ".." in rel.parts:
            raise LanesError(f"path {name!r} is not inside the worktree", "list repository-relative paths")
        kind, content = _describe(root, root / rel)
        outer.update(os.fsencode(name) + b"\0" + kind.encode() + b"\0" + content + b"\n")
    return str(outer.hexdigest())


#: A file larger than this is digested by its size, modification time, inode and its first and last
#: `LARGE_SAMPLE_BYTES`, not read whole (issue 28: a 20 GB sparse file held `check` and `accept`).
MAX_HASHED_BYTES = 256 * 1024 * 1024
LARGE_SAMPLE_BYTES = 4 * 1024 * 1024


def describe_path(root: Path, path: Path) -> tuple[str, bytes]:
    """(kind, content hash) of one path under `root`, as the digest sees it (symlinks not followed)."""
    return _describe(root.resolve(), path)


def _describe(root: Path, path: Path) -> tuple[str, bytes]:
    """(kind, content hash) of one path: regular, exec, symlink, dir, other, missing or outside."""
    if not inside(path.parent, root):
        return "outside", b""
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return "missing", b""
    if stat.S_ISLNK(st.st_mode):
        return "symlink", sha256_hex(os.fsencode(os.readlink(path))).encode()
    if stat.S_ISDIR(st.st_mode):
        return "dir", b""
    if not stat.S_ISREG(st.st_mode):
        return "other", b""
    inner = content_hasher()
    with open(path, "rb") as handle:
        if st.st_size > MAX_HASHED_BYTES:  # bounded: an agent's 20 GB file is not read through
            inner.update(f"large:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}\0".encode())
            inner.update(handle.read(LARGE_SAMPLE_BYTES))
            handle.seek(max(0, st.st_size - LARGE_SAMPLE_BYTES))
            inner.update(handle.read(LARGE_SAMPLE_BYTES))
        else:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                inner.update(chunk)
    return ("exec" if st.st_mode & stat.S_IXUSR else "regular"), inner.hexdigest().encode()


def ahead_behind(repo: Path, branch: str, target: str) -> tuple[int, int]:
    """(commits on `branch` not on `target`, commits on `target` not on `branch`)."""
    ours, theirs = rev_parse(repo, branch), rev_parse(repo, target)
    counts = _out(repo, "rev-list", "--left-right", "--count", f"{ours}...{theirs}").split()
    return int(counts[0]), int(counts[1])


def unique_commits(repo: Path, branch: str) -> int:
    """Commits reachable from `branch` and from no other local branch: what deleting it loses.

    A branch that does not exist loses nothing, so that is 0 rather than an error.
    """
    _refuse_option(branch, "branch")
    if not _branch_exists(repo, branch):
        return 0
    refs = _out(repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
    tip, others = "", []
    for line in refs.splitlines():
        sha, _, ref = line.partition(" ")
        if ref == f"refs/heads/{branch}":
            tip = sha
        else:
            others.append(f"^{sha}")
    stdin = "\n".join([tip, *others, ""]).encode()
    proc = _git(repo, "rev-list", "--count", "--stdin", stdin=stdin)
    return int(proc.stdout.strip() or b"0")


def remove_worktree(repo: Path, worktree_root: Path, path: Path, branch: str | None, *,
                    force: bool = True) -> list[str]:
    """Remove a lane's worktree folder and its `lane/` branch; return what was removed.

    Every guard runs before anything is touched: the folder must resolve strictly inside the
    worktree root and be neither the repository, inside it, nor above it; the branch must be a
    `lane/<id>` branch and not the one checked out in the repository; a locked worktree is left
    alone. Whatever is already gone is skipped, so a second call (or a crashed first) is harmless.
    Without `force`, a dirty worktree or an unmerged branch is refused by git instead.
    """
    repo = repo.resolve()
    root = worktree_root.expanduser().resolve()
    target = path.expanduser().resolve()
    if not inside(target, root) or target == root:
        raise LanesError(f"refusing to remove {path}: it is not inside the worktree root {root}",
                         "only lane worktrees under the worktree root are removed")
    if inside(target, repo) or inside(repo, target):
        raise LanesError(f"refusing to remove {path}: it is or contains the repository {repo}",
                         "only lane worktrees outside the repository are removed")
    if branch is not None:
        validate_lane_branch(branch)
        if current_branch(repo) == branch:
            raise LanesError(f"refusing to delete {branch}: it is checked out in {repo}",
                             "check out another branch in the repository first")
    entries = {e.path.resolve(): e for e in _list_worktrees(repo)}
    entry = entries.get(target)
    if entry is not None and entry.locked:
        raise LanesError(f"worktree {target} is locked", f"unlock it with `git worktree unlock {target}`")
    if entry is None and target.is_dir() and not force:
        raise LanesError(f"{target} is not a registered worktree", "remove it with force")
    if entry is None and target.is_dir():
        _check_not_foreign(repo, target)

    removed: list[str] = []
    fix = "close programs using the worktree, then abandon again" if force else "abandon with force"
    if entry is not None and target.exists():
        _git(repo, "worktree", "remove", *(["--force"] if force else []), str(target), fix=fix)
        removed.append(f"worktree {target}")
    _git(repo, "worktree", "prune", fix=fix)
    if os.path.lexists(target):
        if not inside(target, root):  # re-checked right before the only recursive delete
            raise LanesError(f"refusing to remove {target}: it left the worktree root", fix)
        _rmtree(target)
        removed.append(f"folder {target}")
    if branch is not None and _branch_exists(repo, branch):
        _git(repo, "branch", "-D" if force else "-d", branch,
             fix=fix if force else f"merge {branch} first or abandon with force")
        removed.append(f"branch {branch}")
    return removed


def _check_not_foreign(repo: Path, folder: Path) -> None:
    """An unregistered folder whose `.git` file points at another repository is not ours to delete,
    and one with a `.git` folder is a clone or a repository of its own: never a lane's worktree."""
    dot_git = folder / ".git"
    if dot_git.is_dir():
        raise LanesError(f"refusing to remove {folder}: it is a git repository of its own, not a lane worktree",
                         "lanes-tui only removes worktrees of this repository; move it out of the worktree root")
    text = dot_git.read_text(encoding="utf-8", errors="replace").strip() if dot_git.is_file() else ""
    if not text.startswith("gitdir:"):
        return
    gitdir = (folder / text[len("gitdir:"):].strip()).resolve()
    common = (repo / _out(repo, "rev-parse", "--git-common-dir")).resolve()
    if not inside(gitdir, common):
        raise LanesError(f"refusing to remove {folder}: it is a worktree of another repository",
                         "remove it from that repository with `git worktree remove`")


def _rmtree(path: Path) -> None:
    """Delete a folder even when it holds read-only files (module caches often do)."""

    def retry(func: Any, failed: str, _exc: Any) -> None:
        with contextlib.suppress(OSError):
            parent = os.path.dirname(failed)
            os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)
        func(failed)

    import shutil  # 0.7 MB (bz2, lzma) a lane's supervisor would carry for a removal it never does

    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    elif sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)


def list_lane_worktrees(repo: Path) -> list[WorktreeEntry]:
    """The worktrees on `lane/<id>` branches, for the Worktrees pane and `finish`."""
    lanes: list[WorktreeEntry] = []
    for entry in _list_worktrees(repo):
        if not entry.branch.startswith(BRANCH_PREFIX):
            continue
        try:
            validate_lane_branch(entry.branch)
        except LanesError:
            continue
        lanes.append(entry)
    return sorted(lanes, key=lambda e: str(e.path))


def is_dirty(worktree: Path) -> bool:
    """True if anything is staged, modified, deleted or untracked (ignored files do not count)."""
    proc = _git(worktree, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
    return bool(proc.stdout.strip(b"\0"))
