"""When may a supervisor have died? pidfds tell the engine, so reconcile need not run on a timer.

`decisions.reconcile` reads every record and every `supervisor.json` to find lanes whose supervisor
is gone; run every 2 s it cost the dashboard more than all its other work at 100 lanes. A supervisor
killed with SIGKILL writes nothing, so no file event announces it; a pidfd does: it turns readable
when the process ends, whoever its parent is. The engine keeps one per lane in a supervised state
(`track`), on the loop through `add_reader`, and reconciles when one fires.

A pidfd is opened for the pid in `supervisor.json` and only then checked against the recorded start
time, so it cannot refer to a recycled pid. Where `os.pidfd_open` is missing or refused (old kernel,
seccomp), `poll_dead` checks those pids once per tick instead (one `/proc/<pid>/stat` read each).

A pidfd says nothing when a supervisor is stopped (SIGSTOP: an agent can do it to its parent) and
so can enforce no limit; `poll_stopped` reads each tracked supervisor's state letter once a second,
and the engine reconciles while one is stopped (`decisions.deadlines`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from lanes_tui.engine.lanes.launcher import supervisor_key
from lanes_tui.engine.procs.procfs import read_stat
from lanes_tui.engine.procs.tree import ProcKey, same_process


class SupervisorLiveness:
    """One pidfd (or, without pidfds, one polled key) per tracked lane; `on_exit(lane_id)` when it ends."""

    def __init__(self, repo: Path, on_exit: Callable[[str], None], *, use_pidfd: bool = True) -> None:
        self.repo = repo
        self._on_exit = on_exit
        self._use_pidfd = use_pidfd and hasattr(os, "pidfd_open")
        self._keys: dict[str, ProcKey] = {}
        self._fds: dict[str, int] = {}
        self._polled: set[str] = set()  # lanes tracked without a pidfd
        self._stopped: set[str] = set()  # lanes whose supervisor was stopped at the last `poll_stopped`

    @property
    def tracked(self) -> set[str]:
        return set(self._keys)

    def track(self, lane_id: str) -> bool:
        """Watch this lane's supervisor; False when it is not alive now (the caller reconciles)."""
        key = supervisor_key(self.repo, lane_id)
        if key is not None and self._keys.get(lane_id) == key:
            return True  # already watched, and a pidfd that fired has been dropped
        self.untrack(lane_id)
        if key is None:
            return False
        fd = self._open(key.pid)
        if not key.alive():  # checked after opening: the pidfd cannot name a recycled pid
            if fd is not None:
                os.close(fd)
            return False
        self._keys[lane_id] = key
        if fd is None:
            self._polled.add(lane_id)
        else:
            self._fds[lane_id] = fd
            asyncio.get_running_loop().add_reader(fd, self._ended, lane_id)
        return True

    def untrack(self, lane_id: str) -> None:
        self._keys.pop(lane_id, None)
        self._polled.discard(lane_id)
        self._stopped.discard(lane_id)
        fd = self._fds.pop(lane_id, None)
        if fd is not None:
            with contextlib.suppress(ValueError, OSError, RuntimeError):
                asyncio.get_running_loop().remove_reader(fd)
            os.close(fd)

    def poll_dead(self) -> list[str]:
        """Lanes tracked without a pidfd whose supervisor is gone (each is untracked)."""
        dead = [lane_id for lane_id in self._polled if not self._keys[lane_id].alive()]
        for lane_id in dead:
            self.untrack(lane_id)
        return dead

    def poll_stopped(self) -> set[str]:
        """Lanes whose supervisor was stopped since the last poll (state T or t: a pidfd says nothing
        of a SIGSTOP), or runs again: reconcile marks the first `unreachable` and restores the second;
        a stopped lane's deadline is kept by the engine's regular reconcile. One `/proc/<pid>/stat`
        read per tracked supervisor."""
        now = set()
        for lane_id, key in self._keys.items():
            stat = read_stat(key.pid)
            if stat is not None and stat.state in ("T", "t") and same_process(key.pid, key.create_time):
                now.add(lane_id)
        changed = now ^ self._stopped
        self._stopped = now
        return changed

    def close(self) -> None:
        for lane_id in list(self._keys):
            self.untrack(lane_id)

    def _open(self, pid: int) -> int | None:
        if not self._use_pidfd:
            return None
        try:
            return os.pidfd_open(pid)
        except ProcessLookupError:
            return None  # gone already: `alive()` says so next
        except OSError:  # ENOSYS, EPERM under seccomp: poll instead, from now on
            self._use_pidfd = False
            return None

    def _ended(self, lane_id: str) -> None:
        self.untrack(lane_id)
        self._on_exit(lane_id)
