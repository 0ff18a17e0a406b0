"""Pausing a lane's processes in place, so they neither run nor spend while the lead decides.

A cgroup freeze is the exact way: it holds every member, a child forked a moment ago included, and
the agent can neither see nor undo it. Where the lane has no cgroup (or the freeze does not
complete), SIGSTOP to each process of the tree is the honest fallback: a few rounds catch a child
forked while the others were being stopped, and `pause` returns only once the kernel shows them
stopped. Used by the spend guard (`lanes.spend`).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lanes_tui.engine.procs.cgroup import LaneCgroup

__all__ = ["TreePauser"]

log = logging.getLogger(__name__)


class TreePauser:
    """Pause and resume a lane's processes: the lane's cgroup frozen where there is one, else
    SIGSTOP to every pid of its process tree (`procs` lists them; a few rounds catch a child forked
    while the others were being stopped) and SIGCONT on resume. A pid that vanished is ignored."""

    def __init__(self, cgroup: LaneCgroup | None, procs: Callable[[], Iterable[int]], *,
                 freeze_timeout_s: float = 5.0, rounds: int = 3) -> None:
        self.cgroup = cgroup
        self.procs = procs
        self.freeze_timeout_s = freeze_timeout_s
        self.rounds = rounds
        #: How the lane was paused last: "cgroup-freeze", "sigstop", or None while running.
        self.mechanism: str | None = None
        self._frozen = False
        self._stopped: set[int] = set()

    def pause(self) -> None:
        if self.mechanism is not None:
            return
        if self.cgroup is not None:
            self._frozen = True  # written even if it did not complete: `resume` must thaw
            if self.cgroup.freeze(self.freeze_timeout_s):
                self.mechanism = "cgroup-freeze"
                return
        for _ in range(self.rounds):
            fresh = [pid for pid in self._pids() if pid not in self._stopped]
            if not fresh:
                break
            for pid in fresh:
                if _signal(pid, signal.SIGSTOP):
                    self._stopped.add(pid)
        # A SIGSTOP lands when its target next runs, not when `kill` returns: wait for that, so
        # "paused" means nothing of the lane runs (or spends) any more.
        _wait_stopped(self._stopped, self.freeze_timeout_s)
        self.mechanism = "sigstop"

    def resume(self) -> None:
        if self._frozen and self.cgroup is not None:
            self.cgroup.thaw()
        self._frozen = False
        if self._stopped:
            for pid in self._stopped | set(self._pids()):
                _signal(pid, signal.SIGCONT)
        self._stopped.clear()
        self.mechanism = None

    def _pids(self) -> list[int]:
        own = os.getpid()
        return [pid for pid in self.procs() if pid > 1 and pid != own]


def _wait_stopped(pids: Iterable[int], timeout_s: float) -> None:
    waiting = set(pids)
    end = time.monotonic() + timeout_s
    while waiting:
        waiting = {pid for pid in waiting if _state(pid) not in ("T", "t", "Z", "X", "")}
        if not waiting:
            return
        if time.monotonic() >= end:
            log.warning("processes %s not stopped after %.1fs", sorted(waiting), timeout_s)
            return
        time.sleep(0.002)


def _state(pid: int) -> str:
    """The one-letter state of /proc/PID/stat ("" when the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0].decode()
    except (OSError, IndexError):
        return ""


def _signal(pid: int, sig: signal.Signals) -> bool:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    except PermissionError as exc:
        log.warning("cannot send %s to %d: %s", sig.name, pid, exc)
        return False
    return True
