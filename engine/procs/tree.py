"""Reading process trees and identities: who a process is (pid + start time), its descendants, and
processes found by their environment.

Split from `process` (which re-exports these names) so the handle's stop logic and the tree reads
can each be read on their own. Nothing here signals a process: `process` does that.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lanes_tui.engine.procs.procfs import boot_time, read_stat

if TYPE_CHECKING:
    import psutil

__all__ = [
    "TREE_READS", "ProcKey", "child_pids", "descendant_pids", "descendants", "process_create_time",
    "processes_with_env", "reap_adopted_zombies", "same_process",
]

#: At most this many reads of a process tree before the union of them is the answer.
TREE_READS = 5
#: A start time above this is a wall-clock time written by an earlier version (seconds since the
#: epoch); today's are seconds since boot, which no machine reaches (about three years of uptime).
LEGACY_WALL_CLOCK = 1e8


@dataclass(frozen=True)
class ProcKey:
    """A process identity that survives pid reuse: the pid and its start in seconds since boot."""

    pid: int
    create_time: float

    def alive(self) -> bool:
        return same_process(self.pid, self.create_time)


def process_create_time(pid: int) -> float | None:
    stat = read_stat(pid)
    return stat.create_time if stat is not None else None


def same_process(pid: int | None, create_time: float | None, tolerance: float = 0.05) -> bool:
    """True if `pid` is alive (not a zombie) and is the process that was created at `create_time`."""
    if not pid or create_time is None:
        return False
    stat = read_stat(pid)
    if stat is None or stat.zombie:
        return False
    started = stat.create_time
    if create_time > LEGACY_WALL_CLOCK:  # a record from before start times were since boot
        started += boot_time()
    return abs(started - create_time) <= tolerance


def descendants(pid: int, *, reads: int = TREE_READS) -> list[psutil.Process]:
    """The living descendants as psutil processes; `reads` as in `descendant_pids`."""
    import psutil

    procs = []
    for child in descendant_pids(pid, reads=reads):
        try:
            procs.append(psutil.Process(child))
        except psutil.Error:
            continue
    return procs


def processes_with_env(name: str, value: str, *, also: Mapping[str, str] | None = None) -> list[ProcKey]:
    """Every living process whose environment has `name=value` (and the `also` pairs).

    A lane's processes all inherit `LANES_LANE` and `LANES_HOME`, even ones that left the process
    group with setsid and were re-parented to init, so this finds a lost lane's leftovers.
    """
    import psutil

    found: list[ProcKey] = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == me:
            continue
        try:
            env = proc.environ()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
        if env.get(name) != value:
            continue
        if also and any(env.get(k) != v for k, v in also.items()):
            continue
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:
            continue
        stat = read_stat(proc.pid)
        if stat is not None:
            found.append(ProcKey(proc.pid, stat.create_time))
    return found


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid` from `/proc/<pid>/task/*/children`: no scan of every process.

    psutil's `children()` reads the stat file of every process on the machine to build a parent
    map; with a hundred lanes, each sampling its tree, that is quadratic. The kernel keeps each
    task's children list; this reads only those. Falls back to psutil where the file is missing.
    """
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found.extend(int(x) for x in handle.read().split())
        except FileNotFoundError:
            continue
        except OSError:
            return [c.pid for c in _psutil_children(pid, recursive=False)]
    return found


def descendant_pids(pid: int, *, reads: int = TREE_READS) -> list[int]:
    """Every descendant of `pid` (breadth first), read until two reads in a row agree.

    proc(5) says a task's `children` list is reliable only while the children are stopped or
    frozen: one read can miss a living child while a sibling is being created or reaped, and a
    child missed at stop time is a process nobody signals. So the tree is read again until two
    reads give the same set (at most `reads` reads) and the union of every read is returned; a
    pid that exited in between costs nothing, since callers go by (pid, create time).
    """
    union: dict[int, None] = {}
    previous: set[int] | None = None
    for _ in range(max(1, reads)):
        current = _descendants_once(pid)
        union.update(dict.fromkeys(current))
        if previous is not None and set(current) == previous:
            break
        previous = set(current)
    return list(union)


def _descendants_once(pid: int) -> list[int]:
    """One breadth-first walk of the children lists below `pid`."""
    out: list[int] = []
    frontier = [pid]
    seen = {pid}
    while frontier:
        nxt: list[int] = []
        for parent in frontier:
            for child in child_pids(parent):
                if child not in seen:
                    seen.add(child)
                    out.append(child)
                    nxt.append(child)
        frontier = nxt
    return out


def _psutil_children(pid: int, *, recursive: bool) -> list[psutil.Process]:
    import psutil

    try:
        return list(psutil.Process(pid).children(recursive=recursive))
    except psutil.Error:
        return []


def reap_adopted_zombies(keep: Iterable[int] = ()) -> int:
    """Reap zombie children we adopted as subreaper (never the ones asyncio waits for)."""
    skip = set(keep)
    reaped = 0
    for pid in child_pids(os.getpid()):
        if pid in skip:
            continue
        stat = read_stat(pid)
        if stat is None or not stat.zombie:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
            reaped += 1
        except (ChildProcessError, OSError):
            continue
    return reaped
