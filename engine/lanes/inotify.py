"""Linux inotify through ctypes: the watchdog's "a file changed in the worktree" signal.

The watchdog asks once per sample whether the agent touched any file. Walking a 20,000-file worktree
each time would make the sample cost grow with the repository (benchmark B3 wants it flat), so the
kernel tells us instead: one watch per directory, added once at start and for each directory that
appears later. No third-party dependency: three libc calls and ``os.read``. Directories git ignores
(a ``node_modules`` of 5,000 directories) get no watch at all: `lanes.watch_skip` says why and how.

Where inotify is unavailable (not Linux, no libc symbol, too many instances, or the per-user watch
limit ``fs.inotify.max_user_watches`` reached) :meth:`TreeWatcher.start` returns False and
:meth:`TreeWatcher.poll_changed` falls back to a cheap scan: it ``stat``\\ s each known directory and
lists only the ones whose mtime moved. That sees files created, deleted or renamed, but **not** a
file rewritten in place (a directory's mtime does not change then), and a change within the same
filesystem timestamp tick as the previous scan may be seen only with the next change. For a stall
watchdog that is enough: an agent that only ever rewrites one file in place, with no output, in the
fallback, would be reported as stalled, which is the safe direction.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Protocol

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

WATCH_MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB
# Only directories, never through a symlink, and no events for files already unlinked.
_ADD_FLAGS = IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK
EVENT = struct.Struct("iIII")  # struct inotify_event: int wd; uint32 mask, cookie, len; char name[]
_READ_SIZE = 64 * 1024
_MAX_READS = 64  # per drain: a flood of events cannot keep drain() from returning
_GITIGNORE = b".gitignore"


class Ignored(Protocol):
    """Directories to leave out by path (git's ignored ones: `lanes.watch_skip.GitIgnored`)."""

    dirs: set[bytes]

    def refresh(self) -> set[bytes]: ...

    def among(self, paths: Iterable[bytes]) -> set[bytes]: ...


class Libc:
    """The three inotify calls, raising OSError with errno like the os module does."""

    def __init__(self) -> None:
        import ctypes

        lib = ctypes.CDLL(None, use_errno=True)
        self._get_errno = ctypes.get_errno
        self._init1 = lib.inotify_init1
        self._init1.argtypes = [ctypes.c_int]
        self._init1.restype = ctypes.c_int
        self._add = lib.inotify_add_watch
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._add.restype = ctypes.c_int
        self._rm = lib.inotify_rm_watch
        self._rm.argtypes = [ctypes.c_int, ctypes.c_int]
        self._rm.restype = ctypes.c_int

    def _check(self, result: int, what: str) -> int:
        if result < 0:
            code = self._get_errno()
            raise OSError(code, f"{what}: {os.strerror(code)}")
        return result

    def init1(self, flags: int) -> int:
        return self._check(int(self._init1(flags)), "inotify_init1")

    def add_watch(self, fd: int, path: bytes, mask: int) -> int:
        return self._check(int(self._add(fd, path, mask)), "inotify_add_watch")

    def rm_watch(self, fd: int, wd: int) -> None:
        self._rm(fd, wd)  # EINVAL when the kernel already dropped it: nothing to do


_cached: list[Libc | None] = []


def pending_reads(fd: int, max_reads: int = _MAX_READS, size: int = _READ_SIZE) -> Iterator[bytes]:
    """What a non-blocking inotify descriptor holds now, read by read, never waiting for more."""
    for _ in range(max_reads):
        try:
            data = os.read(fd, size)
        except BlockingIOError:
            return
        if not data:
            return
        yield data


def load_libc() -> Libc | None:
    """The libc binding, or None where inotify does not exist; loaded once, on first use."""
    if not _cached:
        lib: Libc | None = None
        if sys.platform.startswith("linux"):
            try:
                lib = Libc()
            except (OSError, AttributeError):
                lib = None
        _cached.append(lib)
    return _cached[0]


_NOTHING: set[bytes] = set()


def _subdirs(path: bytes, exclude: frozenset[bytes], skip: set[bytes] = _NOTHING) -> list[bytes]:
    """Child directories of `path`, not following symlinks, skipping excluded names and `skip` paths."""
    try:
        with os.scandir(path) as entries:
            return [e.path for e in entries if e.name not in exclude and e.path not in skip
                    and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


class _MtimeScanner:
    """The fallback: stat every known directory, list only those whose mtime moved.

    Cost per scan is one stat per directory, never one per file; new subdirectories can only appear
    in a directory whose mtime moved, so listing just those keeps the set of directories complete.
    """

    def __init__(self, top: bytes, exclude: frozenset[bytes], skip: set[bytes] = _NOTHING) -> None:
        self._exclude = exclude
        self._skip = skip  # the watcher's own set, so a refresh of git's ignored ones reaches here too
        self._mtimes: dict[bytes, int] = {}
        self._add_tree(top)

    def _add_tree(self, top: bytes) -> None:
        stack = [top]
        while stack:
            path = stack.pop()
            try:
                self._mtimes[path] = os.stat(path, follow_symlinks=False).st_mtime_ns
            except OSError:
                continue
            stack.extend(p for p in _subdirs(path, self._exclude, self._skip) if p not in self._mtimes)

    def scan(self) -> int:
        """How many directories changed (or vanished) since the previous scan."""
        changed = 0
        for path, old in list(self._mtimes.items()):
            try:
                now = os.stat(path, follow_symlinks=False).st_mtime_ns
            except OSError:
                del self._mtimes[path]
                changed += 1
                continue
            if now != old:
                changed += 1
                self._mtimes[path] = now
                for sub in _subdirs(path, self._exclude, self._skip):
                    if sub not in self._mtimes:
                        self._add_tree(sub)
        return changed


class TreeWatcher:
    """Tells whether anything changed under a directory tree since the last time it was asked.

    Use: ``start()`` once; then either ``loop.add_reader(w.fileno(), ...)`` and ``drain()`` when
    readable, or call ``poll_changed()`` once per sample. ``close()`` when done (remove any reader
    from the loop first). Names in `exclude` are skipped at any depth, and changes to an entry of
    that name (a worktree's ``.git`` file, say) are not counted. `ignored` leaves out directories by
    path (git's ignored ones, asked again when a ``.gitignore`` changes); `on_limit` is called once,
    the first time the per-user watch limit is reached.
    """

    def __init__(self, root: Path, *, exclude: Collection[str] = (".git",),
                 use_inotify: bool = True, ignored: Ignored | None = None,
                 on_limit: Callable[[], None] | None = None) -> None:
        self.root = Path(root)
        self.exclude = frozenset(exclude)
        self._exclude_b = frozenset(os.fsencode(name) for name in exclude)
        self._top = os.fsencode(os.path.realpath(self.root))
        self._use_inotify = use_inotify  # False forces the fallback (tests, odd filesystems)
        self._libc: Libc | None = None
        self._fd = -1
        self._paths: dict[int, bytes] = {}  # watch descriptor -> directory
        self._scanner: _MtimeScanner | None = None
        self._started = False
        self._ignored = ignored
        self._skip: set[bytes] = set()  # absolute directories never watched nor scanned
        self._on_limit = on_limit
        self.limit_reached = False

    @property
    def active(self) -> bool:
        """True while inotify is in use (so `fileno()` is valid)."""
        return self._fd >= 0

    @property
    def degraded(self) -> bool:
        """True when the mtime scan runs: inotify was unavailable, or ran out of watches later."""
        return self._scanner is not None

    @property
    def watch_count(self) -> int:
        """How many directories carry a watch now (what this watcher costs of the per-user limit)."""
        return len(self._paths)

    def start(self) -> bool:
        """Watch the tree; False means inotify is unavailable and the mtime scan is used instead."""
        if self._started:
            return self.active
        self._started = True
        if self._ignored is not None:
            self._skip |= self._ignored.refresh()
        lib = load_libc() if self._use_inotify else None
        if lib is not None:
            try:
                self._fd = lib.init1(os.O_NONBLOCK | os.O_CLOEXEC)  # IN_NONBLOCK | IN_CLOEXEC
            except OSError:
                self._fd = -1
            if self._fd >= 0:
                self._libc = lib
                if self._watch_tree(self._top):
                    return True
                self._close_fd()  # watch limit reached: closing the fd drops the partial watches
        self._scanner = _MtimeScanner(self._top, self._exclude_b, self._skip)
        return False

    def fileno(self) -> int:
        """The inotify descriptor, readable when events are pending (for `loop.add_reader`)."""
        if self._fd < 0:
            raise ValueError("inotify is not active (start() returned False); use poll_changed()")
        return self._fd

    def drain(self) -> int:
        """Read every pending event without blocking; how many there were.

        In the fallback this is the number of directories whose mtime moved since the last call.
        New directories get their watches here, so call it regularly.
        """
        if not self._started:
            raise RuntimeError("TreeWatcher.drain() before start()")
        count = self._read_events() if self._fd >= 0 else 0
        if self._scanner is not None:
            count += self._scanner.scan()
        return count

    def poll_changed(self) -> bool:
        """Whether anything changed since the previous call: drains inotify, or scans in the fallback."""
        return self.drain() > 0

    def changed_since_last(self) -> bool:
        """The same as `poll_changed()`, under the name that reads better at a call site."""
        return self.poll_changed()

    def close(self) -> None:
        self._close_fd()
        self._scanner = None

    def __enter__(self) -> TreeWatcher:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- internals --------------------------------------------------------------------------------

    def _close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._paths.clear()

    def _watch_tree(self, top: bytes) -> bool:
        """Add a watch on `top` and every directory below it; False when the watch limit is hit."""
        assert self._libc is not None
        stack = [top]
        while stack:
            path = stack.pop()
            try:
                wd = self._libc.add_watch(self._fd, path, WATCH_MASK | _ADD_FLAGS)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    self._limit_hit()
                    return False
                continue  # vanished, not a directory any more, or unreadable: nothing to watch
            self._paths[wd] = path  # an already-watched inode returns its old wd: path updated
            stack.extend(_subdirs(path, self._exclude_b, self._skip))
        return True

    def _limit_hit(self) -> None:
        if not self.limit_reached:
            self.limit_reached = True
            if self._on_limit is not None:
                self._on_limit()

    def _refresh_ignored(self) -> None:
        """A `.gitignore` changed: unwatch what is newly ignored, watch what no longer is."""
        assert self._ignored is not None
        old = set(self._skip)
        self._skip.clear()
        self._skip |= self._ignored.refresh()
        for path in self._skip - old:
            self._unwatch_under(path)
        watched = set(self._paths.values())
        for path in old - self._skip:
            if os.path.dirname(path) in watched and os.path.isdir(path):
                self._watch_tree(path)

    def _unwatch_under(self, top: bytes) -> None:
        """Drop watches for a directory moved away (it may now be outside the tree)."""
        assert self._libc is not None
        prefix = top + b"/"
        for wd, path in list(self._paths.items()):
            if path == top or path.startswith(prefix):
                self._libc.rm_watch(self._fd, wd)
                del self._paths[wd]

    def _read_events(self) -> int:
        count = 0
        new_dirs: list[bytes] = []
        rescan = refresh = False
        for data in pending_reads(self._fd):
            offset = 0
            while offset + EVENT.size <= len(data):
                wd, mask, _cookie, length = EVENT.unpack_from(data, offset)
                start = offset + EVENT.size
                name = data[start:start + length].rstrip(b"\0")
                offset = start + length
                if mask & IN_Q_OVERFLOW:  # events were lost, maybe new directories among them
                    count += 1
                    rescan = True
                    continue
                if mask & IN_IGNORED:
                    self._paths.pop(wd, None)
                    continue
                if name in self._exclude_b:
                    continue
                count += 1
                if name == _GITIGNORE and self._ignored is not None:
                    refresh = True
                parent = self._paths.get(wd)
                if not mask & IN_ISDIR or parent is None:
                    continue
                path = os.path.join(parent, name)
                if mask & (IN_CREATE | IN_MOVED_TO):
                    new_dirs.append(path)
                elif mask & IN_MOVED_FROM:
                    self._unwatch_under(path)
        if refresh:
            self._refresh_ignored()
        if rescan:
            new_dirs = [self._top]
        elif new_dirs and self._ignored is not None:
            self._skip |= self._ignored.among(new_dirs)  # one git call for the batch
        for path in new_dirs:
            if path not in self._skip and not self._watch_tree(path) and self._scanner is None:
                # Out of watches mid-run: keep the events we get, and scan for the rest.
                self._scanner = _MtimeScanner(self._top, self._exclude_b, self._skip)
        return count
