"""One sample of a lane's process tree: CPU seconds, RSS, the process set. Cheap by design.

The supervisor is a child subreaper, so every descendant of the agent (even one that called setsid
and lost its parent) stays below the supervisor, and the kernel's per-task children lists give the
tree without reading every process on the machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from lanes_tui.engine.procs.tree import TREE_READS, descendants


@dataclass(frozen=True)
class ProcInfo:
    """One process of a lane's tree, as the sampler saw it."""

    pid: int
    create_time: float
    name: str
    cmdline: str
    cpu_s: float
    rss: int
    ppid: int

    @property
    def key(self) -> tuple[int, float]:
        return (self.pid, self.create_time)

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "ppid": self.ppid, "name": self.name, "cmdline": self.cmdline,
                "cpu_s": round(self.cpu_s, 3), "rss": self.rss}



def sample_tree(root_pid: int | None = None, *, exclude_self: bool = True,
                stable: bool = False) -> tuple[ProcInfo, ...]:
    """The living descendants of `root_pid` (default: this process).

    A meter sample reads the tree once: a child missed in one tick is seen in the next. `stable`
    (the stop sweep, where a missed child is one nobody signals) re-reads until two reads agree.
    """
    root = root_pid or os.getpid()
    infos: list[ProcInfo] = []
    children = descendants(root, reads=TREE_READS if stable else 1)
    for proc in children:
        if exclude_self and proc.pid == os.getpid():
            continue
        try:
            with proc.oneshot():
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                times = proc.cpu_times()
                infos.append(ProcInfo(
                    pid=proc.pid,
                    create_time=float(proc.create_time()),
                    name=proc.name(),
                    cmdline=" ".join(proc.cmdline())[:300],
                    cpu_s=float(times.user + times.system + times.children_user + times.children_system),
                    rss=int(proc.memory_info().rss),
                    ppid=proc.ppid(),
                ))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return tuple(infos)
