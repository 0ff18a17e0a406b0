"""What the worktree watcher leaves out: git's ignored directories, `[lanes] watch_skip`, the watch limit.

One `node_modules` or `.venv` has tens of thousands of directories, and inotify costs one watch per
directory out of a per-user limit (`fs.inotify.max_user_watches`) shared by every lane and editor on
the machine. Nothing an agent does there is its work (git would not commit it), so the watcher never
enters a directory git ignores. Git is asked once for the whole tree at start
(`ls-files --others --ignored --exclude-standard --directory`, which stops at an ignored directory
instead of listing its contents, and reads nested `.gitignore` files itself), again when a
`.gitignore` changes, and with one `check-ignore --stdin` per batch of directories that appear later
(an `npm install` creating `node_modules` after the lane started).

A directory that git ignores but that holds tracked files is listed by git file by file, not as a
directory, so it stays watched.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.lanes.inotify import TreeWatcher

#: The sysctl a lead runs when the limit is too low (the doctor and the lane's event say it).
RAISE_LIMIT = "sudo sysctl fs.inotify.max_user_watches=524288"
LIMIT_FILE = Path("/proc/sys/fs/inotify/max_user_watches")


def watch_limit() -> int | None:
    """The current `fs.inotify.max_user_watches`, or None where there is no such file (not Linux)."""
    try:
        return int(LIMIT_FILE.read_text().strip())
    except (OSError, ValueError):
        return None


def limit_message() -> str:
    """One line for the lane's events and `doctor`: what happened, the current value, the fix."""
    limit = watch_limit()
    current = f" (fs.inotify.max_user_watches = {limit})" if limit is not None else ""
    return (f"inotify watch limit reached{current}: file activity falls back to a directory scan; "
            f"raise it with `{RAISE_LIMIT}`")


def describe_watch_limit() -> str | None:
    """`doctor`'s line: the current limit and the sysctl to raise it; None where inotify is absent."""
    limit = watch_limit()
    if limit is None:
        return None
    return (f"fs.inotify.max_user_watches = {limit} (one watch per directory a lane works in, git's "
            f"ignored ones left out); raise it with `{RAISE_LIMIT}`")


class GitIgnored:
    """The directories git ignores under one worktree, as absolute byte paths like the watcher's."""

    def __init__(self, top: bytes) -> None:
        self.top = top
        self.dirs: set[bytes] = set()

    def refresh(self) -> set[bytes]:
        """Ask git for every ignored directory again; the new set (empty when git fails)."""
        try:
            proc = run_git(Path(os.fsdecode(self.top)), "ls-files", "--others", "--ignored",
                           "--exclude-standard", "--directory", "-z", check=False)
        except LanesError:
            return self.dirs
        if proc.returncode != 0:
            return self.dirs  # not a worktree (a test's plain folder): nothing is ignored
        # Ignored files are listed too; only entries ending in "/" are whole directories.
        self.dirs = {os.path.join(self.top, entry.rstrip(b"/")) for entry in proc.stdout.split(b"\0")
                     if entry.endswith(b"/")}
        return self.dirs

    def among(self, paths: Iterable[bytes]) -> set[bytes]:
        """Which of these new directories git ignores (one `check-ignore` for the batch); remembered."""
        inside = [p for p in paths if p.startswith(self.top + b"/")]
        if not inside:
            return set()
        relative = b"\0".join(p[len(self.top) + 1:] for p in inside) + b"\0"
        try:
            proc = run_git(Path(os.fsdecode(self.top)), "check-ignore", "--stdin", "-z", check=False,
                           stdin=relative)
        except LanesError:
            return set()
        if proc.returncode not in (0, 1):  # 1: none of them is ignored
            return set()
        found = {os.path.join(self.top, entry) for entry in proc.stdout.split(b"\0") if entry}
        self.dirs |= found
        return found


def lane_tree_watcher(worktree: Path, watch_skip: Collection[str],
                      on_limit: Callable[..., None]) -> TreeWatcher:
    """The supervisor's watcher for a lane: `.git`, `watch_skip` and git's ignored directories left out.

    `on_limit` is the lane's event writer (`store.event` bound to the lane): called once, with
    ``"watch-limit"`` and the message, the first time the watch limit is reached.
    """
    top = os.fsencode(os.path.realpath(worktree))
    watcher = TreeWatcher(worktree, exclude=(".git", *watch_skip), ignored=GitIgnored(top),
                          on_limit=lambda: on_limit("watch-limit", message=limit_message()))
    watcher.start()
    return watcher
