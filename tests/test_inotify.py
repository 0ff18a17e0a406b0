"""TreeWatcher: the kernel's events for a worktree, and the directory-mtime fallback.

inotify queues an event before the writing syscall returns, so every check here reads right after
the change, without sleeping; the fallback tests set directory mtimes into the past first, so a
change cannot land in the same filesystem timestamp tick as the baseline.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes_tui.engine.lanes import inotify
from lanes_tui.engine.lanes.inotify import TreeWatcher

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux-only")


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "wt"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".git" / "objects").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "README.md").write_text("# hi\n")
    return root


@pytest.fixture()
def watcher(tree: Path) -> Iterator[TreeWatcher]:
    w = TreeWatcher(tree)
    yield w
    w.close()


def _age(root: Path) -> None:
    """Move every directory's mtime an hour back, so the next change always moves it."""
    for dirpath, _dirs, _files in os.walk(root):
        st = os.stat(dirpath)
        os.utime(dirpath, ns=(st.st_atime_ns, st.st_mtime_ns - 3600 * 10**9))


@linux_only
def test_start_watches_every_directory_but_excluded(watcher: TreeWatcher) -> None:
    assert watcher.start() is True
    assert watcher.active and not watcher.degraded
    assert watcher.watch_count == 3  # wt, wt/src, wt/src/pkg; not .git nor .git/objects
    assert watcher.drain() == 0
    assert watcher.changed_since_last() is False


@linux_only
def test_write_in_a_nested_file_is_seen(watcher: TreeWatcher, tree: Path) -> None:
    watcher.start()
    (tree / "src" / "pkg" / "mod.py").write_text("x = 2\n")
    assert watcher.drain() >= 1
    assert watcher.changed_since_last() is False  # drained: nothing new since


@linux_only
def test_attribute_change_is_seen(watcher: TreeWatcher, tree: Path) -> None:
    watcher.start()
    os.chmod(tree / "README.md", 0o600)
    assert watcher.poll_changed() is True


@linux_only
def test_new_file_in_a_directory_created_after_start(watcher: TreeWatcher, tree: Path) -> None:
    watcher.start()
    (tree / "new" / "deeper").mkdir(parents=True)
    assert watcher.changed_since_last() is True  # the mkdir itself; watches are added here
    assert watcher.watch_count == 5
    (tree / "new" / "deeper" / "file.txt").write_text("hello\n")
    assert watcher.changed_since_last() is True


@linux_only
def test_delete_is_seen(watcher: TreeWatcher, tree: Path) -> None:
    watcher.start()
    (tree / "src" / "pkg" / "mod.py").unlink()
    assert watcher.changed_since_last() is True
    shutil.rmtree(tree / "src")
    assert watcher.changed_since_last() is True
    assert watcher.watch_count == 1  # the kernel dropped the deleted directories' watches


@linux_only
def test_changes_under_git_are_not_seen(watcher: TreeWatcher, tree: Path) -> None:
    watcher.start()
    (tree / ".git" / "index").write_text("binary\n")
    (tree / ".git" / "objects" / "ab").mkdir()
    assert watcher.changed_since_last() is False


@linux_only
def test_a_worktree_git_file_is_excluded_too(tmp_path: Path) -> None:
    root = tmp_path / "wt"
    root.mkdir()
    (root / ".git").write_text("gitdir: /elsewhere\n")
    with TreeWatcher(root) as w:
        (root / ".git").write_text("gitdir: /moved\n")
        assert w.changed_since_last() is False
        (root / "a.txt").write_text("a\n")
        assert w.changed_since_last() is True


@linux_only
def test_directory_renamed_inside_the_tree_keeps_being_watched(watcher: TreeWatcher, tree: Path) -> None:
    watcher.start()
    (tree / "src").rename(tree / "lib")
    assert watcher.changed_since_last() is True
    (tree / "lib" / "pkg" / "mod.py").write_text("x = 3\n")
    assert watcher.changed_since_last() is True


@linux_only
def test_directory_moved_out_of_the_tree_is_forgotten(watcher: TreeWatcher, tree: Path,
                                                      tmp_path: Path) -> None:
    watcher.start()
    (tree / "src").rename(tmp_path / "outside")
    assert watcher.changed_since_last() is True
    (tmp_path / "outside" / "pkg" / "mod.py").write_text("x = 4\n")
    assert watcher.changed_since_last() is False


@linux_only
def test_symlinked_directories_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "wt"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    with TreeWatcher(root) as w:
        assert w.watch_count == 1
        (outside / "f.txt").write_text("f\n")
        assert w.changed_since_last() is False


@linux_only
async def test_fileno_works_with_the_event_loop(watcher: TreeWatcher, tree: Path) -> None:
    watcher.start()
    loop = asyncio.get_running_loop()
    seen: asyncio.Queue[int] = asyncio.Queue()
    loop.add_reader(watcher.fileno(), lambda: seen.put_nowait(watcher.drain()))
    try:
        (tree / "README.md").write_text("# changed\n")
        assert await asyncio.wait_for(seen.get(), timeout=5) >= 1
    finally:
        loop.remove_reader(watcher.fileno())


def test_forced_fallback_sees_creates_deletes_and_new_directories(tree: Path) -> None:
    _age(tree)
    w = TreeWatcher(tree, use_inotify=False)
    assert w.start() is False
    assert w.degraded and not w.active
    with pytest.raises(ValueError, match="not active"):
        w.fileno()
    assert w.poll_changed() is False
    (tree / "src" / "new.py").write_text("y = 1\n")
    assert w.poll_changed() is True
    assert w.poll_changed() is False
    (tree / "src" / "sub").mkdir()
    assert w.poll_changed() is True
    _age(tree)
    w.poll_changed()  # takes the aged mtimes as the new baseline
    (tree / "src" / "sub" / "in_new_dir.txt").write_text("z\n")
    assert w.poll_changed() is True
    (tree / "README.md").unlink()
    assert w.changed_since_last() is True
    w.close()


def test_fallback_ignores_excluded_directories(tree: Path) -> None:
    _age(tree)
    with TreeWatcher(tree, use_inotify=False) as w:
        (tree / ".git" / "objects" / "pack").mkdir()
        assert w.poll_changed() is False


def test_fallback_when_inotify_is_missing(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inotify, "load_libc", lambda: None)
    _age(tree)
    with TreeWatcher(tree) as w:
        assert not w.active and w.degraded
        (tree / "new.txt").write_text("n\n")
        assert w.poll_changed() is True


class _LimitedLibc:
    """The real binding with a watch limit of `limit`, as `fs.inotify.max_user_watches` would impose."""

    def __init__(self, real: inotify.Libc, limit: int) -> None:
        self.real = real
        self.limit = limit
        self.added = 0

    def init1(self, flags: int) -> int:
        return self.real.init1(flags)

    def add_watch(self, fd: int, path: bytes, mask: int) -> int:
        if self.added >= self.limit:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.added += 1
        return self.real.add_watch(fd, path, mask)

    def rm_watch(self, fd: int, wd: int) -> None:
        self.real.rm_watch(fd, wd)


@linux_only
def test_watch_limit_at_start_falls_back(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = inotify.load_libc()
    assert real is not None
    monkeypatch.setattr(inotify, "load_libc", lambda: _LimitedLibc(real, limit=1))
    _age(tree)
    with TreeWatcher(tree) as w:
        assert w.active is False and w.degraded
        (tree / "src" / "pkg" / "other.py").write_text("o\n")
        assert w.poll_changed() is True


@linux_only
def test_watch_limit_later_adds_the_scan(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = inotify.load_libc()
    assert real is not None
    monkeypatch.setattr(inotify, "load_libc", lambda: _LimitedLibc(real, limit=3))
    with TreeWatcher(tree) as w:
        assert w.active and not w.degraded
        (tree / "big").mkdir()
        assert w.poll_changed() is True  # the mkdir event; no watch left for big/
        assert w.active and w.degraded
        _age(tree)
        w.poll_changed()
        (tree / "big" / "f.txt").write_text("seen by the scan\n")
        assert w.poll_changed() is True


def test_drain_before_start_is_a_programming_error(tree: Path) -> None:
    with pytest.raises(RuntimeError):
        TreeWatcher(tree).drain()
