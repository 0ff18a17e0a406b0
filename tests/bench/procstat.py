"""CPU and memory of process trees straight from /proc (no psutil): shared by B8–B10.

CPU is (utime + stime + cutime + cstime) from `/proc/PID/stat`, so a process's reaped children
(git calls, short helpers) count for it; a window's figure is the sum of the differences over the
processes alive at both ends, in % of one core. Memory is RSS from `/proc/PID/status` and PSS from
`/proc/PID/smaps_rollup` (shared pages split between the processes that map them).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is field 3 (state): utime..cstime are fields 14..17
    return sum(int(v) for v in fields[11:15]) / TICK


def start_ticks(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2:].split()[19])


def children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except OSError:
            continue
    return out


def tree(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children(p)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _kb(path: str, key: str) -> float:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return float(line.split()[1])
    except OSError:
        pass
    return float("nan")


def _sum(values: Iterable[float]) -> float:
    """A process that ended between listing and reading (a git call, say) counts as nothing."""
    return sum(v for v in values if v == v)


def rss_mb(pids: Iterable[int]) -> float:
    return _sum(_kb(f"/proc/{p}/status", "VmRSS:") for p in pids) / 1024


def pss_mb(pids: Iterable[int]) -> float:
    return _sum(_kb(f"/proc/{p}/smaps_rollup", "Pss:") for p in pids) / 1024


@dataclass
class Clock:
    """CPU seconds of a set of pids at one moment."""

    wall: float
    cpu: dict[int, float]

    @classmethod
    def take(cls, pids: Iterable[int]) -> Clock:
        cpu = {}
        for pid in pids:
            value = cpu_seconds(pid)
            if value is not None:
                cpu[pid] = value
        return cls(time.monotonic(), cpu)

    def percent_since(self, before: Clock) -> float:
        wall = self.wall - before.wall
        used = sum(self.cpu[p] - before.cpu[p] for p in self.cpu.keys() & before.cpu.keys())
        return 100.0 * used / wall if wall > 0 else 0.0
