"""Read-only views of a lane for the dashboard: its Worktrees row, its commits, its diff.

Why GitPython here, and only here: the Worktrees pane is polled every few seconds while it is shown,
and GitPython answers "which commit is `lane/x`", "what changed since the base" and "who wrote this
commit" from the repository files or through one long-lived `git cat-file --batch` helper per
`Repo`, instead of a git process per question. Those helpers outlive the call unless the `Repo` is
closed, so every view opens its own `with Repo(path)` (`_open`) and closes it before returning: no
`git cat-file` survives a refresh (a test walks the process tree to prove it). GitPython is imported
inside `_open`, so importing this module costs nothing until a view is asked for, and nothing the
supervisor or `lanes-tui ask` imports leads here (tests/test_import_hygiene.py checks both).

Where GitPython has no cheaper answer than git's own porcelain (`status -z`, `diff --numstat`,
`rev-list --count`) the view runs that through the same `Repo`, bounded by `VIEW_TIMEOUT_S`.

`lane_diff` stays on the git command line (`run_git`): its text must be exactly what `git diff` and
`git diff --no-index` print, which GitPython would only wrap (new files come from one pass in a
temporary index, `git.patches`, not one git process each). Everything that writes (worktree add
and remove, commit, rebase, merge) stays on the command line too, in `worktrees` and `decisions`,
with their timeouts and process control.

A view never raises into the dashboard: a missing worktree, a broken repository, a deleted target
branch or a git that times out leaves the numbers it prevents at None (the pane shows them blank),
the rest of the row is filled, and the reason is logged once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.commands import GIT_ENV_DROP, run_git
from lanes_tui.engine.git.harden import LaneGitDirs, common_dir, dotgit_problem, hardened_env
from lanes_tui.engine.git.patches import large_files, one_pass_patches, too_large_patch
from lanes_tui.engine.state.model import LaneRecord

if TYPE_CHECKING:
    from git import Repo
    from git.objects import Commit

log = logging.getLogger(__name__)

MAX_DIFF_BYTES = 512 * 1024
#: How many of a lane's commits its Worktrees row carries (the pane shows them in a tooltip).
COMMITS_SHOWN = 5
#: A read-only view that takes longer than this is killed: the pane shows blanks, not a frozen refresh.
VIEW_TIMEOUT_S = 60.0
#: A new (untracked) file larger than this adds no counted lines. git treats files above
#: core.bigFileThreshold as binary in diffs too; the bound is lower here so a refresh never reads
#: a data set an agent downloaded into its worktree.
BIG_FILE_BYTES = 8 * 1024 * 1024
#: git calls a file binary when a NUL byte appears in its first 8000 bytes; so do we.
BINARY_SNIFF_BYTES = 8000
#: GitPython reads these while opening a repository, so overriding them afterwards is too late.
_OPEN_ENV = ("GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")
#: The dashboard's diff: no textconv or external diff a lane could have configured (the review's
#: `lanes-tui diff` also shows the text of a file only an attribute calls binary: `decisions.lane_diff`).
VIEW_DIFF = ("--no-color", "--no-ext-diff", "--no-textconv")


def lane_diff(record: LaneRecord) -> str:
    """Everything the lane changed against its base: tracked changes plus new untracked files."""
    worktree = Path(record.worktree)
    if not worktree.is_dir():
        return f"(the worktree {worktree} is gone)"
    untracked = run_git(worktree, "ls-files", "--others", "--exclude-standard", "-z", check=False).stdout
    names = [os.fsdecode(n) for n in untracked.split(b"\0") if n]
    changed = run_git(worktree, "diff", "--name-only", "-z", "--no-renames", record.base_sha, "--", check=False).stdout
    large = large_files(worktree, [*(os.fsdecode(n) for n in changed.split(b"\0") if n), *names])
    if large:  # never handed to git (it would read them whole): their size stands in (`git.patches`)
        return _diff_around(worktree, record.base_sha, names, changed, large)
    tracked = run_git(worktree, "diff", *VIEW_DIFF, record.base_sha, check=False).stdout
    parts = [os.fsdecode(tracked)]
    try:  # one pass for every new file (git.patches); the lane's own index is never written
        patches = one_pass_patches(worktree, record.base_sha, names, (*VIEW_DIFF, "--no-renames"))
    except LanesError:
        patches = {}
    for name in names:
        new = patches.get(name)
        if new is None:
            new = run_git(worktree, "diff", *VIEW_DIFF, "--no-index", "--", "/dev/null", name, check=False).stdout
        parts.append(os.fsdecode(new))
    text = "".join(parts)
    if len(text) > MAX_DIFF_BYTES:
        text = text[:MAX_DIFF_BYTES] + f"\n… diff cut at {MAX_DIFF_BYTES // 1024} KiB …\n"
    return text or "(no changes yet)"


def _diff_around(worktree: Path, base: str, untracked: list[str], changed: bytes, large: dict[str, int]) -> str:
    """The lane's diff with the files over the size limit summarised, every other path from one pass."""
    paths = sorted({*(os.fsdecode(n) for n in changed.split(b"\0") if n), *untracked})
    try:
        patches = one_pass_patches(worktree, base, [n for n in untracked if n not in large],
                                   (*VIEW_DIFF, "--no-renames"),
                                   only=[p for p in paths if p not in large])
    except LanesError:
        patches = {}
    text = "".join(os.fsdecode(too_large_patch(p, large[p]) if p in large else patches.get(p, b"")) for p in paths)
    if len(text) > MAX_DIFF_BYTES:
        text = text[:MAX_DIFF_BYTES] + f"\n… diff cut at {MAX_DIFF_BYTES // 1024} KiB …\n"
    return text


def worktree_row(repo: Path, record: LaneRecord) -> dict[str, Any]:
    """The lane's row in the Worktrees pane.

    {lane, path, branch, changed, insertions, deletions, ahead, behind, commits}: `changed` counts the paths
    that differ from the base (commits, index, working files and new files, as accept stages them),
    `insertions`/`deletions` are the lines added and removed against the base, uncommitted and new
    files included, and `ahead`/`behind` count commits against the target branch (behind > 0 means
    an accept rebases first). The counts against the target are read in the main repository, where
    the lane branch lives, so a lane whose worktree is gone still shows them. A number that cannot
    be read is None. `commits` are the lane's newest `COMMITS_SHOWN` own commits (`lane_commits`).
    """
    worktree = Path(record.worktree)
    row: dict[str, Any] = {"lane": record.id, "path": str(worktree), "branch": record.branch, "changed": None,
                           "insertions": None, "deletions": None, "ahead": None, "behind": None}
    _fill(row, record.id, "ahead/behind", lambda: _ahead_behind(repo, record.branch, record.target_branch))
    if worktree.is_dir():
        _fill(row, record.id, "changes", lambda: _changes(_checked(repo, record), record.base_sha))
    else:
        row["path"] += " (gone)"
    row["commits"] = lane_commits(record, limit=COMMITS_SHOWN)
    return row


def lane_commits(record: LaneRecord, limit: int = 20) -> list[dict[str, Any]]:
    """The lane's own commits, newest first: those on its branch since its base, at most `limit`.

    Each is {sha (full), summary (first line), author (name), timestamp (author time, Unix
    seconds)}. Read in the main repository (`record.repo`), so a lane whose worktree is gone still
    lists its commits; a branch or repository that cannot be read gives [].
    """
    if limit <= 0 or not record.repo:  # an empty path would open whatever repository holds the cwd
        return []
    try:
        with _open(Path(record.repo)) as git_repo:
            tip = git_repo.commit(record.branch).hexsha
            base = git_repo.commit(record.base_sha).hexsha
            # Fully consumed, so the rev-list process is reaped before the Repo closes.
            return [_commit_row(c) for c in git_repo.iter_commits(f"{base}..{tip}", max_count=limit)]
    except Exception as exc:  # a view never raises into the dashboard; _unknown logs bugs loudly
        _unknown(record.id, "commits", exc)
        return []


# --- the parts of a row ----------------------------------------------------------------------------

def _ahead_behind(repo: Path, branch: str, target: str) -> dict[str, int]:
    """{ahead, behind}: commits only on the lane branch, commits only on the target."""
    with _open(repo) as git_repo:
        ours, theirs = git_repo.commit(branch).hexsha, git_repo.commit(target).hexsha
        counts = _porcelain(git_repo, "rev-list", "--left-right", "--count", f"{ours}...{theirs}").split()
    return {"ahead": int(counts[0]), "behind": int(counts[1])}


def _checked(repo: Path, record: LaneRecord) -> Path:
    """The lane's worktree, once its `.git` file points at the lane's own git folder (`git.harden`):
    GitPython reads that file, so a redirected one would show another repository's changes."""
    dirs = LaneGitDirs(Path(record.worktree).resolve(), common_dir(repo) / "worktrees" / record.id, common_dir(repo))
    problem = dotgit_problem(dirs)
    if problem is not None:
        raise LanesError(problem)
    return dirs.worktree


def _changes(worktree: Path, base_sha: str) -> dict[str, int]:
    """{changed, insertions, deletions} of the worktree as it stands, against `base_sha`.

    `changed` is the same set as `worktrees.changed_files` (a file changed in a commit and reverted
    in the working tree still counts: accept would stage it); the line counts compare the base with
    the files on disk, so uncommitted edits count and a reverted file does not.
    """
    with _open(worktree) as git_repo:
        base = git_repo.commit(base_sha)
        paths: set[bytes] = set()
        for diff in base.diff(git_repo.head.commit):  # committed since the base (renames: both names)
            paths.update(p for p in (diff.a_rawpath, diff.b_rawpath) if p)
        new: list[bytes] = []
        status = _porcelain(git_repo, "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all")
        for entry in status.split(b"\0"):  # staged, unstaged and untracked, each "XY path"
            if len(entry) > 3:
                paths.add(entry[3:])
                if entry.startswith(b"??"):
                    new.append(entry[3:])
        numstat = _porcelain(git_repo, "diff", "--numstat", "-z", "--no-renames", base.hexsha, "--")
    insertions, deletions = _sum_numstat(numstat)
    insertions += sum(_new_file_lines(worktree / os.fsdecode(name)) for name in new)
    return {"changed": len(paths), "insertions": insertions, "deletions": deletions}


def _sum_numstat(out: bytes) -> tuple[int, int]:
    """Total lines added and removed in `diff --numstat -z` output (a binary file shows "-" and adds 0)."""
    added = removed = 0
    for item in out.split(b"\0"):
        fields = item.split(b"\t", 2)
        if len(fields) == 3 and fields[0].isdigit() and fields[1].isdigit():
            added += int(fields[0])
            removed += int(fields[1])
    return added, removed


def _new_file_lines(path: Path) -> int:
    """The lines a new file adds, as `git diff --numstat` counts them against /dev/null.

    Text lines (a last line without a newline counts), a symlink's target as one line, nothing for
    a binary file, a folder (a nested repository) or a file over BIG_FILE_BYTES. Read here rather
    than with one `git diff --no-index` per file: an agent can create thousands.
    """
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            return 1
        if not stat.S_ISREG(st.st_mode) or st.st_size > BIG_FILE_BYTES:
            return 0
        data = path.read_bytes()
    except OSError:
        return 0
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return 0
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _commit_row(commit: Commit) -> dict[str, Any]:
    summary = commit.summary
    return {"sha": commit.hexsha,
            "summary": summary if isinstance(summary, str) else summary.decode("utf-8", "replace"),
            "author": commit.author.name or "", "timestamp": commit.authored_date}


# --- opening a repository, and failures ------------------------------------------------------------

@contextlib.contextmanager
def _open(path: Path) -> Iterator[Repo]:
    """`with Repo(path)`: closed on the way out, which stops its `git cat-file` helpers.

    No search of parent folders: a worktree folder whose `.git` is broken must fail, not silently
    show the repository that happens to contain it.
    """
    for name in _OPEN_ENV:
        if name in os.environ:
            raise LanesError(f"{name} is set in the dashboard's environment",
                             f"start lanes-tui without {name} (not from inside a git hook)")
    from git import Repo

    with Repo(path) as git_repo:
        _pin_environment(git_repo)
        # git.harden: nothing of a lane's runs; the views only read, so a lane's private objects are seen
        git_repo.git.update_environment(**{k: v for k, v in hardened_env(path, reads=True).items()
                                           if k.startswith("GIT_CONFIG_") or k == "GIT_ALTERNATE_OBJECT_DIRECTORIES"})
        yield git_repo


def _pin_environment(git_repo: Repo) -> None:
    """Point every git this `Repo` runs at its own repository, whatever a surrounding hook exported.

    `run_git` drops these variables; GitPython can only add to its children's environment, so when
    one is set it is overridden with this repository's own value (or emptied) instead.
    """
    if not any(name in os.environ for name in GIT_ENV_DROP):
        return
    git_dir = os.fspath(git_repo.git_dir)
    git_repo.git.update_environment(GIT_DIR=git_dir, GIT_INDEX_FILE=os.path.join(git_dir, "index"),
                                    GIT_ALTERNATE_OBJECT_DIRECTORIES="", GIT_NAMESPACE="", GIT_PREFIX="")


def _porcelain(git_repo: Repo, command: str, *args: str) -> bytes:
    """The stdout of `git command args…` in this repository, as bytes so any file name survives."""
    out = getattr(git_repo.git, command.replace("-", "_"))(
        *args, stdout_as_string=False, kill_after_timeout=VIEW_TIMEOUT_S)
    return out if isinstance(out, bytes) else os.fsencode(str(out))


def _fill(row: dict[str, Any], lane_id: str, what: str, read: Callable[[], dict[str, int]]) -> None:
    """Put what `read` learns into the row; if it fails, its numbers stay None."""
    try:
        row.update(read())
    except Exception as exc:  # a view never raises into the dashboard; _unknown logs bugs loudly
        _unknown(lane_id, what, exc)


#: (lane, message) pairs already logged: a refresh every few seconds must not repeat them forever.
_logged: set[tuple[str, str]] = set()


def _unknown(lane_id: str, what: str, exc: Exception) -> None:
    """Log why part of a view is unknown: an expected git failure once, anything else as a bug."""
    if not isinstance(exc, _expected_errors()):
        log.error("lane %s: reading its %s failed unexpectedly", lane_id, what, exc_info=exc)
        return
    key = (lane_id, f"{what}: {exc}")
    if key not in _logged:
        if len(_logged) > 1000:
            _logged.clear()
        _logged.add(key)
        text = " ".join(str(exc).split())
        reason = text if isinstance(exc, LanesError) else f"{type(exc).__name__}: {text}".rstrip(": ")
        log.warning("lane %s: %s unknown: %s", lane_id, what, reason)


def _expected_errors() -> tuple[type[Exception], ...]:
    """What a lost worktree, a broken repository, a bad ref or a killed git raise."""
    try:
        from git.exc import GitError, ODBError
    except ImportError:  # GitPython missing: every view reports it as unknown, the dashboard lives on
        return (ImportError, LanesError, OSError, ValueError)
    return (GitError, ODBError, LanesError, OSError, ValueError)
