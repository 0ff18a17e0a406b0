"""One lane's caps at work: the controllers set up, the agent started inside them, a cap that fired named.

The supervisor makes a `LaneGovernor` once per lane (after the containment cgroup), passes
`preexec()` to every agent it starts and the governor itself to each `AgentRun` as a guard:

* `check` reads, on every watchdog tick, whether the kernel acted (an OOM kill in the lane, a fork
  the pids cap refused) and, for caps no controller holds here, compares the sample with the cap
  (the sampler's fallback); either ends the run `FAILED-RESOURCE`;
* `after_exit` explains an agent that died of the kernel's OOM kill (a SIGKILL it did not choose).

A finding names the cap, its value, the peak, the mechanism and the process that was killed, so the
lead (and the next attempt's prompt, `decisions.recover`) knows what to change.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.sizes import format_bytes
from lanes_tui.engine.lanes.caps import LaneCaps, mechanisms
from lanes_tui.engine.lanes.guard import Finding
from lanes_tui.engine.lanes.watchdog import ProcInfo, Sample
from lanes_tui.engine.procs import caps_cgroup
from lanes_tui.engine.procs.caps_cgroup import CapCgroup
from lanes_tui.engine.procs.cgroup import LaneCgroup, pids_alive
from lanes_tui.engine.procs.process import lower_io_priority

log = logging.getLogger(__name__)

Events = Callable[..., None]


class LaneGovernor:
    """The caps of one lane: set up with `start`, a `RunGuard` for each run, `close` at the end."""

    def __init__(self, caps: LaneCaps, controllers: dict[str, CapCgroup], containment: LaneCgroup | None,
                 plan: list[dict[str, str]], nproc: int | None) -> None:
        self.caps = caps
        self.controllers = controllers
        self.containment = containment
        self.plan = plan
        self.nproc = nproc
        self.fired: dict[str, Any] | None = None
        self._baseline = {name: c.fired() for name, c in controllers.items()}
        self._peak_rss = 0
        self._peak_procs = 0
        self._prev_procs: tuple[ProcInfo, ...] = ()
        #: The agent of the current run (pid, command name): the victim when the kernel killed it
        #: before any sample saw the tree.
        self.agent: tuple[int, str] | None = None
        self._agent_rc: int | None = None
        self._waited = False

    @classmethod
    def start(cls, caps: LaneCaps, repo_key: str, lane_id: str, containment: LaneCgroup | None,
              events: Events) -> LaneGovernor:
        """Make the lane's controller cgroups and write the caps; what cannot hold falls back (said)."""
        v2_lane = containment.path if containment is not None and containment.mechanism == "cgroup-v2" else None
        fallback = mechanisms()
        controllers: dict[str, CapCgroup] = {}
        plan: list[dict[str, str]] = []
        for name in caps_cgroup.CONTROLLERS:
            value = getattr(caps, name)
            if not value:
                plan.append({"cap": name, "value": "off", "mechanism": "off"})
                continue
            found = caps_cgroup.find_controller(name, repo_key, lane_id, v2_lane)
            if found is not None:
                try:
                    found.apply(value)
                except OSError as exc:
                    events("governor", cap=name, problem=f"cannot write {found.mechanism}: {exc}")
                    found.remove()
                    found = None
            item = {"cap": name, "value": caps.shown(name), "mechanism": _fallback_text(name, fallback)}
            if found is not None:
                controllers[name] = found
                item.update(mechanism=found.mechanism, cgroup=str(found.path))
            plan.append(item)
        nproc = None
        if "pids" not in controllers and caps.pids and os.geteuid() != 0:
            nproc = caps_cgroup.user_process_count() + caps.pids  # per user: the lane's share on top
        plan.append({"cap": "nice", "value": caps.shown("nice"),
                     "mechanism": "setpriority + ionice" if caps.nice else "off"})
        if caps.nice:
            _lower_io_priority()
        governor = cls(caps, controllers, containment, plan, nproc)
        events("governor", caps=plan)
        return governor

    # starting an agent -----------------------------------------------------------------------------
    def preexec(self) -> Callable[[], None]:
        """Join the containment and every controller cgroup, lower the priority, set RLIMIT_NPROC."""
        folders = [c.path for c in self.controllers.values() if c.owned]
        if self.containment is not None:
            folders.insert(0, self.containment.path)
        return caps_cgroup.preexec([f / "cgroup.procs" for f in folders], nice=self.caps.nice, nproc=self.nproc)

    def begin_run(self) -> None:
        """A new provider run: what the kernel counted before it is not this run's finding."""
        self._baseline = {name: c.fired() for name, c in self.controllers.items()}
        self._prev_procs = ()
        self.agent, self._agent_rc, self._waited = None, None, False

    def joined(self, pid: int) -> list[str]:
        """The controllers whose cgroup `pid` did not join (empty when it joined them all)."""
        missing = []
        for name, ctl in self.controllers.items():
            try:
                members = (ctl.path / "cgroup.procs").read_text().split()
            except OSError:
                members = []
            if str(pid) not in members and pids_alive([pid]):
                missing.append(name)
        return missing

    def record(self) -> dict[str, Any]:
        """What `lane.json` keeps under `governor`: the caps with their mechanisms, and what fired."""
        return {"caps": self.plan, "fired": self.fired}

    # RunGuard ------------------------------------------------------------------------------------------
    def check(self, sample: Sample) -> Finding | None:
        self._peak_rss = max(self._peak_rss, sample.rss)
        self._peak_procs = max(self._peak_procs, len(sample.procs))
        seen = self._prev_procs + sample.procs  # an OOM victim is in the sample before, not this one
        self._prev_procs = sample.procs
        for name in ("memory", "pids"):
            ctl = self.controllers.get(name)
            if ctl is not None and ctl.fired() > self._baseline.get(name, 0):
                if name == "memory" and not self._waited and not _victim(seen) and self._agent_dying():
                    # The kernel is still tearing the agent down: its exit (or the next tick) names it.
                    self._waited = True
                    self._prev_procs = seen
                    return None
                return self._finding(name, seen if name == "memory" else sample.procs, kernel=True)
        if "memory" not in self.controllers and self.caps.memory and sample.rss >= self.caps.memory:
            return self._finding("memory", sample.procs, kernel=False)
        if "pids" not in self.controllers and self.caps.pids and len(sample.procs) >= self.caps.pids:
            return self._finding("pids", sample.procs, kernel=False)
        return None

    def after_exit(self, returncode: int | None, last: tuple[ProcInfo, ...]) -> Finding | None:
        self._agent_rc = returncode
        for name in ("memory", "pids"):
            ctl = self.controllers.get(name)
            if ctl is not None and ctl.fired() > self._baseline.get(name, 0):
                return self._finding(name, self._prev_procs + last, kernel=True)
        return None

    def release(self) -> None:
        return None

    def close(self) -> None:
        """Remove the controller folders (after the lane's processes are gone)."""
        for ctl in self.controllers.values():
            ctl.remove()

    # the finding ---------------------------------------------------------------------------------------
    def _finding(self, name: str, procs: tuple[ProcInfo, ...], *, kernel: bool) -> Finding:
        ctl = self.controllers.get(name)
        mechanism = ctl.mechanism if ctl is not None else "the sampler"
        value = self.caps.shown(name)
        if name == "memory":
            peak_bytes = (ctl.peak() if ctl is not None else None) or self._peak_rss
            peak = format_bytes(peak_bytes)
            if kernel:
                killed = _victim(procs) or self._agent_victim() or "a process the sampler had not seen yet"
                reason = f"memory cap {value} reached ({mechanism}): the kernel killed {killed}; peak {peak}"
            else:
                killed = "the lane's processes (largest: " + (_describe(max(procs, key=lambda p: p.rss))
                                                               if procs else "?") + ")"
                reason = f"memory cap {value} reached ({mechanism}: summed RSS {peak}): lanes-tui stopped {killed}"
        else:
            peak_count = (ctl.peak() if ctl is not None else None) or self._peak_procs
            peak = f"{max(peak_count, len(procs))} processes"
            common = Counter(p.name for p in procs).most_common(1)
            many = f"{common[0][0]} ×{common[0][1]}" if common else "?"
            refused = f"{ctl.fired() - self._baseline.get(name, 0)} fork(s) refused" if ctl else "process count"
            killed = f"the lane's processes (most: {many})"
            reason = f"pids cap {value} reached ({mechanism}, {refused}): lanes-tui stopped {killed}; peak {peak}"
        self.fired = {"cap": name, "value": value, "peak": peak, "mechanism": mechanism, "killed": killed,
                      "reason": reason}
        return Finding("FAILED-RESOURCE", reason, dict(self.fired))


    def _agent_dying(self) -> bool:
        return self.agent is not None and self._agent_rc is None

    def _agent_victim(self) -> str | None:
        """The agent itself, when it died of a SIGKILL it did not choose and no sample saw the tree."""
        if self.agent is None or self._agent_rc not in (None, -9):
            return None
        pid, name = self.agent
        if self._agent_rc is None and pids_alive([pid]):  # alive after all: someone else was killed
            return None
        return f"the agent {name} (pid {pid})"


def _fallback_text(name: str, found: dict[str, str]) -> str:
    return found.get(name) or "none"


def _victim(procs: tuple[ProcInfo, ...]) -> str | None:
    """The process the OOM killer took: the largest of the last sample that is gone now."""
    gone = [p for p in procs if not pids_alive([p.pid])]
    if not gone:
        return None
    return _describe(max(gone, key=lambda p: p.rss))


def _describe(proc: ProcInfo) -> str:
    return f"{proc.name} (pid {proc.pid}, {format_bytes(proc.rss)})"


def _lower_io_priority() -> None:
    """Best-effort I/O class, lowest level, for the supervisor and so for everything it starts."""
    with contextlib.suppress(Exception):
        lower_io_priority(7)


def controller_folders(governor: LaneGovernor | None) -> list[Path]:
    """The folders a test or `doctor` reads the caps back from."""
    return [c.path for c in governor.controllers.values()] if governor else []
