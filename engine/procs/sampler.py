"""One sample of a lane's process tree: CPU seconds, RSS, the process set. Cheap by design.

The supervisor is a child subreaper, so every descendant of the agent (even one that called setsid
and lost its parent) stays below the supervisor, and the kernel's per-task children lists give the
tree without reading every process on the machine. Each process is read from `/proc` directly
(`procs.procfs`): no psutil in the per-sample path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lanes_tui.engine.procs.procfs import process_name, read_cmdline, read_stat
from lanes_tui.engine.procs.tree import TREE_READS, descendant_pids


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
    me = os.getpid()
    for pid in descendant_pids(root, reads=TREE_READS if stable else 1):
        if exclude_self and pid == me:
            continue
        stat = read_stat(pid)
        if stat is None or stat.zombie:
            continue
        cmdline = read_cmdline(pid)
        infos.append(ProcInfo(pid=pid, create_time=stat.create_time, name=process_name(stat.comm, cmdline),
                              cmdline=" ".join(cmdline)[:300], cpu_s=stat.cpu_s, rss=stat.rss, ppid=stat.ppid))
    return tuple(infos)
