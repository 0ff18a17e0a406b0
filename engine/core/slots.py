"""Counted slots through OS file locks: the lane queue (max_parallel, per-provider max) and heavy runs.

A slot is `slot-N.lock` in a folder, held with `flock` for as long as the holder lives. The kernel
drops the lock when the holder dies, so a crashed supervisor never leaks a slot and no central
scheduler has to be running. The holder writes who it is into the file so meters can show it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.clock import Clock, RealClock


@dataclass
class Slot:
    """A held slot; `release()` (or process death) frees it."""

    path: Path
    fd: int
    index: int

    def release(self) -> None:
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def try_acquire(folder: Path, count: int, holder: dict[str, Any]) -> Slot | None:
    """Take the first free slot of `count` in `folder` without waiting, or return None."""
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(max(1, count)):
        path = folder / f"slot-{index}.lock"
        fd, writable = _open_slot(path)
        if fd < 0:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if writable:
            info = dict(holder, pid=os.getpid(), since=time.time())
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        return Slot(path, fd, index)
    return None


def _open_slot(path: Path) -> tuple[int, bool]:
    """(fd, whether the holder can be written into it); (-1, False) when the slot cannot be opened.

    A lane the kernel confines (`lanes.confine`) may not write the slot folder: it opens an existing
    slot file read-only, which `flock` takes just the same (its holder line then stays empty)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644), True
    except PermissionError:
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC), False
        except OSError:
            return -1, False


def ensure_files(folder: Path, count: int) -> None:
    """Make sure `slot-0.lock` … exist, so a confined lane (which cannot create them) finds them."""
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(max(1, count)):
            os.close(os.open(folder / f"slot-{index}.lock", os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))


async def acquire(folder: Path, count: int, holder: dict[str, Any], *, budget_s: float | None,
                  clock: Clock | None = None, poll_s: float = 0.2) -> Slot | None:
    """Wait for a slot; None when `budget_s` passes first (None budget = wait for ever)."""
    clk = clock or RealClock()
    start = clk.monotonic()
    while True:
        slot = try_acquire(folder, count, holder)
        if slot is not None:
            return slot
        if budget_s is not None and clk.monotonic() - start >= budget_s:
            return None
        await clk.sleep(poll_s)


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
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                raw = os.pread(fd, 4096, 0)
                try:
                    found.append(dict(json.loads(raw or b"{}"), slot=path.name))
                except ValueError:
                    found.append({"slot": path.name})
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    return found


def default_load_limit() -> float:
    """The 1-minute load above which heavy runs hold back: twice the cores, the point where a test
    suite started now mostly waits for CPU and slows everything else down with it."""
    return 2.0 * (os.cpu_count() or 1)


async def wait_for_load(limit: float, budget_s: float, clock: Clock) -> None:
    """Hold back while the machine is overloaded (load > `limit`), but never beyond the budget.

    A slot bounds only lanes-tui's own heavy runs; the load also counts what else runs on the machine
    (the lead's build, another user), so a free slot on a saturated machine still waits a while.
    """
    start = clock.monotonic()
    while os.getloadavg()[0] > limit and clock.monotonic() - start < budget_s:
        await clock.sleep(1.0)


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
