"""Where one check's gate processes live, so that when a gate returns nothing it started is left.

A gate runs code the agent wrote (`conftest.py`, a Makefile, a test script). It used to be stopped
by its process group only, so a daemon it forked and `setsid`-ed outlived `check` (and `abandon
--force`) and could rewrite the lane's packet after the gates had judged it. Each check now gets a
scope, and every process of each gate is stopped the moment that gate returns (`sweep`):

* **cgroup-v2 / cgroup-v1**: a cgroup of the check's own, `lanes-tui/<repo key>/<lane id>.gates`
  (a lane id holds no `.`, so it can never be a lane's), joined by each gate between fork and exec
  (`preexec`), so not even a gate's first fork is outside; killed whole (`LaneCgroup.kill`) after
  each gate and removed when the check ends.
* **none** (no writable cgroup, or `LANES_TUI_CGROUP=off`): the gate's process group, then every
  process whose environment holds this check's own marker (`LANES_GATE=<random>`). A daemon that
  also clears its environment (`env -i`) escapes this fallback; `sweep` says which mechanism held,
  and the packet and the gate log carry it.

The process group is killed on the cgroup paths too (it costs one signal, and a gate whose join
failed is still caught). The scope is written into the check's running file (`to_json`) so a
`check` killed with -9 leaves enough for reconcile to stop its gates (`from_json`: the cgroup is
trusted only in its derived shape, the marker only beside the lane's own `LANES_LANE`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass

from lanes_tui.engine.procs import cgroup
from lanes_tui.engine.procs.cgroup import LaneCgroup
from lanes_tui.engine.procs.process import ProcKey, kill_processes_now
from lanes_tui.engine.procs.procfs import read_stat

log = logging.getLogger(__name__)

#: The marker every gate process of one check inherits (the fallback's sweep finds them by it).
GATE_ENV = "LANES_GATE"
_MARKER_RE = re.compile(r"^[0-9a-f]{32}\Z")


def gates_cgroup_name(lane_id: str) -> str:
    """The last part of a check's gate cgroup: never a lane id (those hold no `.`)."""
    return f"{lane_id}.gates"


@dataclass
class Swept:
    """What one sweep found left behind by a gate, and which mechanism stopped it."""

    mechanism: str
    pids: list[int]

    def describe(self) -> str:
        left = (f"stopped {len(self.pids)} process(es) it left behind (pids {' '.join(map(str, self.pids))})"
                if self.pids else "nothing left behind")
        how = self.mechanism if self.mechanism != "none" else f"the process group and the {GATE_ENV} marker (no cgroup)"
        return f"contained by {how}: {left}"


@dataclass
class GateScope:
    """One check's gates: their cgroup (or None), their marker, and why there is no cgroup."""

    cgroup: LaneCgroup | None
    marker: str
    lane_id: str | None
    reason: str

    @classmethod
    def create(cls, repo_key: str | None, lane_id: str | None, *, prefer: str | None = None) -> GateScope:
        """A scope with a cgroup where the machine offers one (and a lane is named), else the fallback."""
        marker = os.urandom(16).hex()
        if repo_key is None or lane_id is None:
            return cls(None, marker, lane_id, "no lane named: process group and marker only")
        support = cgroup.detect(prefer)
        made = LaneCgroup.create(support, repo_key, gates_cgroup_name(lane_id))
        reason = support.reason if made is None else str(made.path)
        return cls(made, marker, lane_id, reason)

    @property
    def mechanism(self) -> str:
        return self.cgroup.mechanism if self.cgroup is not None else "none"

    def describe(self) -> dict[str, str]:
        """For the packet: the mechanism, and where (the cgroup) or why not."""
        if self.cgroup is not None:
            return {"mechanism": self.mechanism, "cgroup": str(self.cgroup.path)}
        return {"mechanism": "none", "detail": f"{self.reason}; fallback: process group + {GATE_ENV} marker sweep"}

    def env(self) -> dict[str, str]:
        return {GATE_ENV: self.marker}

    def preexec(self) -> Callable[[], None] | None:
        """The cgroup join for a gate's `preexec_fn` (None without a cgroup)."""
        return self.cgroup.joiner() if self.cgroup is not None else None

    def sweep(self, pgid: int | None) -> Swept:
        """Kill everything the gate started: the cgroup, the gate's process group, and (without a
        cgroup) every process with this check's marker. Blocking for at most a few seconds."""
        pids: set[int] = set()
        if self.cgroup is not None:
            pids.update(self.cgroup.kill())
        if pgid is not None:
            pids.update(_kill_group(pgid))
        if self.cgroup is None:
            pids.update(kill_processes_now(self._marked(), term_s=0.0, kill_s=3.0))
        if pids:
            log.info("gate left %s behind; stopped by %s", sorted(pids), self.mechanism)
        return Swept(self.mechanism, sorted(pids))

    def _marked(self) -> list[ProcKey]:
        """Every process whose environment holds this check's marker (and the lane's `LANES_LANE`):
        read straight from `/proc/PID/environ`, without psutil, which a supervisor never loads."""
        needles = [f"{GATE_ENV}={self.marker}".encode()]
        if self.lane_id:
            needles.append(f"LANES_LANE={self.lane_id}".encode())
        found = []
        me = os.getpid()
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as handle:
                    entries = set(handle.read().split(b"\0"))
            except OSError:
                continue
            if all(needle in entries for needle in needles):
                stat = read_stat(int(name))
                if stat is not None and not stat.zombie:
                    found.append(ProcKey(stat.pid, stat.create_time))
        return found

    def close(self) -> None:
        """The check is over: its cgroup is emptied and removed."""
        if self.cgroup is not None:
            self.cgroup.kill()
            self.cgroup.remove()

    # the running file ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, object]:
        return {"marker": self.marker, "cgroup": self.cgroup.to_json() if self.cgroup is not None else None}

    @classmethod
    def from_json(cls, data: object, repo_key: str | None, lane_id: str) -> GateScope | None:
        """The scope a killed check noted, with its cgroup only in the derived shape for this lane and
        its marker only in its own form: an edited running file never aims a kill elsewhere."""
        if not isinstance(data, dict):
            return None
        marker = data.get("marker")
        if not isinstance(marker, str) or not _MARKER_RE.match(marker):
            return None
        found = None
        if repo_key is not None and data.get("cgroup") is not None:
            found = LaneCgroup.from_record(data.get("cgroup"), repo_key, gates_cgroup_name(lane_id))
        return cls(found, marker, lane_id, "read back from a check that did not finish")


def _kill_group(pgid: int) -> list[int]:
    """SIGKILL what is left of a process group (its leader has exited; a member keeps its id taken)."""
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                if os.getpgid(int(name)) == pgid:
                    members.append(int(name))
    members = cgroup.pids_alive(members)
    if members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return members
