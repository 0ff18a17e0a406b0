"""Counted slots through OS file locks: the lane queue (max_parallel, per-provider max) and heavy runs.

A slot is `slot-N.lock` in a folder, held with `flock` for as long as the holder lives. The kernel
drops the lock when the holder dies, so a crashed supervisor never leaks a slot and no central
scheduler has to be running. The holder writes who it is into the file so meters can show it.

The heavy slots' folder is shared by every lane of the machine, and an agent runs as the lead's user
(issue 28): a directory, a symlink or a mode-000 file put where `slot-0.lock` belongs used to make
every gate fail, and a symlink made the next holder truncate whatever it pointed at. So a slot file
is opened without following a link and must be a regular file; a damaged one is rebuilt (under a
lock on the folder, so two processes never rebuild the same slot twice) and `doctor` reports it. A
process that may not write the folder (an agent under a Landlock ruleset) takes a slot on a
read-only descriptor (flock needs none) and leaves the holder line out; `ensure_slots` makes the
files before agents run, so they find them there.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.waits import END, LOAD, SLOT, START, OnWait, Wait, machine_load

#: How a slot file is opened (`os.open`'s signature). Tests inject one that refuses writes, since
#: root ignores file modes and a Landlock ruleset cannot be put on the test process itself.
Opener = Callable[[str, int, int], int]
#: Opening for writing refused this way: the file or folder is read-only to this process, not damaged.
READ_ONLY = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # never through a link, never blocking on a FIFO


@dataclass
class Slot:
    """A held slot; `release()` (or process death) frees it."""

    path: Path
    fd: int
    index: int
    #: False when taken on a read-only descriptor: no holder line was written, none is cleared.
    writable: bool = True

    def release(self) -> None:
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            if self.writable:
                os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def try_acquire(folder: Path, count: int, holder: dict[str, Any], *, opener: Opener = os.open) -> Slot | None:
    """Take the first free slot of `count` in `folder` without waiting, or return None.

    A damaged slot file is rebuilt on the way; one this process cannot rebuild (it may not write the
    folder) is passed over, and the lead's side rebuilds it on its next use or `doctor`.
    """
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
    for index in range(max(1, count)):
        path = folder / f"slot-{index}.lock"
        opened = _open_slot(path, opener)
        if opened is None:
            continue
        fd, writable = opened
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if writable:
            info = dict(holder, pid=os.getpid(), since=time.time())
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        return Slot(path, fd, index, writable)
    return None


def _open_slot(path: Path, opener: Opener) -> tuple[int, bool] | None:
    """(fd, writable) of a regular slot file, rebuilding a damaged one once; None if it stays unusable."""
    for attempt in range(2):
        try:
            return _regular(opener(str(path), os.O_RDWR | os.O_CREAT | _FLAGS, 0o644)), True
        except OSError as exc:
            if exc.errno in READ_ONLY:
                with contextlib.suppress(OSError):
                    return _regular(opener(str(path), os.O_RDONLY | _FLAGS, 0)), False
        if attempt == 0:
            try:
                rebuild_slot(path)
            except OSError:
                return None
    return None


def _regular(fd: int) -> int:
    """`fd` when it is a regular file; else closed and refused (a FIFO, a device put in its place)."""
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    raise OSError(errno.EINVAL, "not a regular file")


def slot_damage(path: Path) -> str | None:
    """What is wrong with a slot file, or None when it is a usable regular file (or not there yet)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link"
    if stat.S_ISDIR(info.st_mode):
        return "a directory"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_uid != os.geteuid():
        return f"owned by uid {info.st_uid}"
    if info.st_mode & 0o600 != 0o600:
        return f"mode {stat.S_IMODE(info.st_mode):04o}, not readable and writable by its owner"
    return None


@contextlib.contextmanager
def _folder_locked(folder: Path) -> Iterator[None]:
    """The folder itself flock-ed: one rebuild at a time, and each sees the state the last one left."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def rebuild_slot(path: Path) -> str | None:
    """Make `path` a fresh, empty 0644 slot file if it is damaged; returns what was wrong (None: nothing).

    A file with a bad mode keeps its inode (chmod), so a process holding a lock on it keeps a lock
    that counts; anything else (a link, a directory, a FIFO, a file of another user) is removed and
    made anew, never followed. Raises OSError when this process may not do that.
    """
    with _folder_locked(path.parent):
        what = slot_damage(path)
        if what is None:
            return None
        info = path.lstat()
        if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid():
            os.chmod(path, 0o644)
            return what
        if stat.S_ISDIR(info.st_mode):
            import shutil  # rarely needed, 0.7 MB with bz2 and lzma: kept out of a plain lane's supervisor

            shutil.rmtree(path)
        else:
            os.unlink(path)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _FLAGS, 0o644))
        return what


def ensure_slots(folder: Path, count: int) -> list[str]:
    """Every slot file of `folder` there and sound, made by the lead's side (a supervisor before its
    agent runs, `doctor`) so that a process which may not write the folder still finds them.
    Returns one line per slot rebuilt (`slot-0.lock was a directory: rebuilt`)."""
    folder.mkdir(parents=True, exist_ok=True)
    done = []
    for index in range(max(1, count)):
        path = folder / f"slot-{index}.lock"
        what = rebuild_slot(path)
        if what is not None:
            done.append(f"{path.name} was {what}: rebuilt")
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _FLAGS, 0o644))
    return done


async def acquire(folder: Path, count: int, holder: dict[str, Any], *, budget_s: float | None,
                  clock: Clock | None = None, poll_s: float = 0.2, on_wait: OnWait | None = None) -> Slot | None:
    """Wait for a slot; None when `budget_s` passes first (None budget = wait for ever).

    `on_wait` hears the wait start (who holds the slots) and end, so the caller can say what it waits
    for; a slot free at once is no wait and says nothing.
    """
    clk = clock or RealClock()
    start = clk.monotonic()
    slot = try_acquire(folder, count, holder)
    if slot is not None:
        return slot
    held = tuple(holders(folder)) if on_wait is not None else ()
    if on_wait is not None:
        on_wait(Wait(SLOT, START, 0.0, budget_s, holders=held))
    while True:
        if budget_s is not None and clk.monotonic() - start >= budget_s:
            if on_wait is not None:
                on_wait(Wait(SLOT, END, clk.monotonic() - start, budget_s, holders=tuple(holders(folder)) or held,
                             ok=False))
            return None
        await clk.sleep(poll_s)
        slot = try_acquire(folder, count, holder)
        if slot is not None:
            if on_wait is not None:
                on_wait(Wait(SLOT, END, clk.monotonic() - start, budget_s, holders=held))
            return slot


async def acquire_unless(folder: Path, count: int, holder: dict[str, Any], stop: asyncio.Event | None, *,
                         poll_s: float = 0.25) -> Slot | None:
    """Wait for a slot until `stop` is set (None when it is): a supervisor's wait, which the lead's
    stop must end at once rather than at the next poll."""
    while stop is None or not stop.is_set():
        slot = try_acquire(folder, count, holder)
        if slot is not None:
            return slot
        if stop is None:
            await asyncio.sleep(poll_s)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), poll_s)
    return None


def holders(folder: Path) -> list[dict[str, Any]]:
    """Who holds which slot now: only files whose lock is really held count."""
    found: list[dict[str, Any]] = []
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("slot-*.lock")):
        try:  # a damaged slot (a directory, a link, mode 000) is nobody's: `try_acquire` rebuilds it
            fd = _regular(os.open(path, os.O_RDONLY | _FLAGS))
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                found.append({**_holder_line(os.pread(fd, 4096, 0)), "slot": path.name})
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    return found


def _holder_line(raw: bytes) -> dict[str, Any]:
    """The holder's own line, or nothing when it is not a JSON object (garbage, a read-only holder)."""
    try:
        value = json.loads(raw or b"{}")
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


async def wait_for_load(limit: float, budget_s: float, clock: Clock, *, load: Callable[[], float] | None = None,
                        on_wait: OnWait | None = None, every_s: float = 1.0) -> bool:
    """Hold back while the machine is overloaded (load > `limit`), but never beyond the budget.

    Returns True when the load is (or fell) at or under the limit, False when the budget ran out
    first: the caller decides what a busy machine means (the gates: not run; `lock`: run anyway).
    `load` samples the 1-minute load (`waits.machine_load` unless a test gives its own); `on_wait`
    hears the wait start at the first sample above the limit, and end. A limit of 0 never waits.

    A slot bounds only lanes-tui's own heavy runs; the load also counts what else runs on the machine
    (the lead's build, another user), so a free slot on a saturated machine still waits a while.
    """
    sample = load or machine_load
    if limit <= 0:
        return True
    start = clock.monotonic()
    now = sample()
    if now <= limit:
        return True
    high = now
    if on_wait is not None:
        on_wait(Wait(LOAD, START, 0.0, budget_s, load=now, limit=limit))
    while clock.monotonic() - start < budget_s:
        await clock.sleep(every_s)
        now = sample()
        if now <= limit:
            if on_wait is not None:
                on_wait(Wait(LOAD, END, clock.monotonic() - start, budget_s, load=high, limit=limit))
            return True
        high = now
    if on_wait is not None:
        on_wait(Wait(LOAD, END, clock.monotonic() - start, budget_s, load=high, limit=limit, ok=False))
    return False


def describe_holder(holder: dict[str, Any]) -> str:
    """`lane X since 12:03 (pytest -q)`: who holds a slot, as `lock`'s wait line and `doctor` say it."""
    lane = "".join(ch if ch.isprintable() else "?" for ch in str(holder.get("lane") or "?"))[:64]
    who = "the lead" if lane == "lead" else f"lane {lane}"
    since = holder.get("since")
    if isinstance(since, int | float):
        who += " since " + time.strftime("%H:%M", time.localtime(since))
    what = holder.get("command") or ("gates" if holder.get("repo") else "")
    if what:
        text = "".join(ch if ch.isprintable() else "?" for ch in str(what))
        who += f" ({text[:60] + '…' if len(text) > 60 else text})"
    return who
