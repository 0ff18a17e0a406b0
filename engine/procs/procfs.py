"""One process read straight from `/proc`: state, parent, CPU seconds, start time, RSS, name.

The watchdog samples a lane's tree every few seconds; reading three small files per process is
what that needs, without psutil (about 5 MB of a supervisor's memory) in the per-sample path.
Times are computed as psutil computes them (clock ticks). The start time is kept as the kernel keeps
it, seconds since boot (psutil's `create_time(monotonic=True)`): adding `btime` of `/proc/stat` would
make a process's identity depend on the wall clock, and a clock stepped by NTP (seen on CI: 7 s, in the
middle of a run) then made every live supervisor look like a different process to a reader that read
`btime` after the step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    state: str
    ppid: int
    comm: str
    cpu_s: float  # user + system, own and of reaped children
    create_time: float  # seconds since boot: unaffected by changes of the wall clock
    rss: int

    @property
    def zombie(self) -> bool:
        return self.state == "Z"


def boot_time() -> float:
    """The wall-clock time of boot as the kernel states it now (it moves when the clock is stepped)."""
    with open("/proc/stat", "rb") as handle:
        for line in handle:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    raise OSError("no btime in /proc/stat")  # pragma: no cover - every Linux has it


def read_stat(pid: int) -> ProcStat | None:
    """The process `pid`, or None if it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
        with open(f"/proc/{pid}/statm", "rb") as handle:
            statm = handle.read().split()
    except OSError:
        return None
    try:
        open_paren, close_paren = raw.index(b"("), raw.rindex(b")")
        comm = raw[open_paren + 1:close_paren].decode("utf-8", "replace")
        fields = raw[close_paren + 2:].split()  # fields[0] is the state (field 3 of proc(5))
        ticks = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        return ProcStat(pid=pid, state=fields[0].decode("ascii", "replace"), ppid=int(fields[1]), comm=comm,
                        cpu_s=ticks / CLOCK_TICKS, create_time=int(fields[19]) / CLOCK_TICKS,
                        rss=int(statm[1]) * PAGE_SIZE if len(statm) > 1 else 0)
    except (ValueError, IndexError):
        return None


def read_cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.rstrip(b"\0").split(b"\0")] if raw else []


def process_name(comm: str, cmdline: list[str]) -> str:
    """psutil's rule: the kernel cuts `comm` at 15 characters; the program's path gives it in full."""
    if len(comm) >= 15 and cmdline:
        base = os.path.basename(cmdline[0])
        if base.startswith(comm):
            return base
    return comm
