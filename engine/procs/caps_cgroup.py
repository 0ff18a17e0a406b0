"""The kernel side of a lane's caps: cpu, memory and pids controllers, v2 or v1, and what they report.

The lane's containment cgroup (`procs.cgroup`) is there to stop the lane; caps need controllers,
and which controllers a process may use differs from machine to machine:

* **cgroup v2**: the controller must be listed in `cgroup.controllers` of the cgroup the lanes live
  under and enabled (`+cpu +memory +pids`) in `cgroup.subtree_control` of every level down to the
  lane's folder. The kernel refuses that on a cgroup that holds processes itself (the "no internal
  processes" rule), which is why a delegated subtree (`systemd-run --user --scope -p Delegate=yes`)
  or root at the top of the hierarchy is needed; files: `cpu.max`, `memory.max`,
  `memory.swap.max`, `pids.max`; findings in `memory.events` (`oom_kill`) and `pids.events` (`max`).
* **cgroup v1**: each controller has its own hierarchy (`/sys/fs/cgroup/memory`, …); the lane gets a
  folder `lanes-tui/<repo key>/<lane id>` in each writable one; files: `cpu.cfs_quota_us`,
  `memory.limit_in_bytes` (+ `memory.memsw.limit_in_bytes`: no escape into swap), `pids.max`;
  findings in `memory.oom_control` (`oom_kill`) and `pids.events` (`max`).

A controller with neither is enforced by the fallback (`lanes.caps`): the sampler for memory and
processes, `RLIMIT_NPROC` where the kernel honours it. `find_controller` answers, per controller,
which of these this machine gives.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.procs import cgroup as containment

log = logging.getLogger(__name__)

CONTROLLERS = ("cpu", "memory", "pids")
CPU_PERIOD_US = 100_000
_LIMIT_FILES = {
    (2, "cpu"): "cpu.max", (2, "memory"): "memory.max", (2, "pids"): "pids.max",
    (1, "cpu"): "cpu.cfs_quota_us", (1, "memory"): "memory.limit_in_bytes", (1, "pids"): "pids.max",
}


@dataclass(frozen=True)
class CapCgroup:
    """One controller's cgroup for one lane: the lane's v2 cgroup, or its folder in a v1 hierarchy."""

    controller: str
    version: int
    path: Path
    #: Made for the caps alone (a v1 folder): removed with the lane. A v2 cap shares the lane's
    #: containment cgroup, which `procs.cgroup` removes.
    owned: bool = True

    @property
    def mechanism(self) -> str:
        """`cgroup-v1 memory.limit_in_bytes`: the version and the file that holds the cap."""
        return f"cgroup-v{self.version} {_LIMIT_FILES[(self.version, self.controller)]}"

    def apply(self, value: float) -> None:
        """Write the cap: percent of one core (cpu), bytes (memory), processes (pids). OSError propagates."""
        name = _LIMIT_FILES[(self.version, self.controller)]
        if self.controller == "cpu":
            quota = max(1000, int(CPU_PERIOD_US * value / 100))
            if self.version == 2:
                self._write(name, f"{quota} {CPU_PERIOD_US}")
            else:
                self._write("cpu.cfs_period_us", str(CPU_PERIOD_US))
                self._write(name, str(quota))
        elif self.controller == "memory":
            self._write(name, str(int(value)))
            if self.version == 2:
                with contextlib.suppress(OSError):  # no swap accounting: nothing to escape into
                    self._write("memory.swap.max", "0")
            elif (self.path / "memory.memsw.limit_in_bytes").exists():
                with contextlib.suppress(OSError):
                    self._write("memory.memsw.limit_in_bytes", str(int(value)))
        else:
            self._write(name, str(int(value)))

    def limit_text(self) -> str:
        """The cap as the kernel holds it now (what a test reads back)."""
        return self._read(_LIMIT_FILES[(self.version, self.controller)]).strip()

    def fired(self) -> int:
        """How often the cap acted: OOM kills (memory), refused forks (pids); 0 for cpu."""
        if self.controller == "memory":
            source = "memory.events" if self.version == 2 else "memory.oom_control"
            return _field(self._read(source), "oom_kill")
        if self.controller == "pids":
            return _field(self._read("pids.events"), "max")
        return 0

    def peak(self) -> int | None:
        """The highest memory use in bytes or process count the kernel saw, where it keeps one."""
        names = {"memory": ("memory.peak", "memory.max_usage_in_bytes"), "pids": ("pids.peak",)}
        for name in names.get(self.controller, ()):
            text = self._read(name).strip()
            if text.isdigit():
                return int(text)
        return None

    def throttled_s(self) -> float | None:
        """Seconds the cpu cap held the lane back (cpu only; None where not reported)."""
        if self.controller != "cpu":
            return None
        text = self._read("cpu.stat")
        if self.version == 2:
            usec = _field(text, "throttled_usec")
            return usec / 1e6 if "throttled_usec" in text else None
        nsec = _field(text, "throttled_time")
        return nsec / 1e9 if "throttled_time" in text else None

    def remove(self) -> None:
        """Remove an owned, empty folder and its repository folder once no lane is left in it."""
        if not self.owned:
            return
        try:
            self.path.rmdir()
        except OSError as exc:
            log.info("cannot remove %s: %s", self.path, exc)
            return
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()

    def _write(self, name: str, text: str) -> None:
        (self.path / name).write_text(text)

    def _read(self, name: str) -> str:
        try:
            return (self.path / name).read_text()
        except OSError:
            return ""


def _field(text: str, key: str) -> int:
    """`key N` from a flat-keyed cgroup file (`oom_kill 2`), 0 when absent."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0


def find_controller(controller: str, repo_key: str, lane_id: str, v2_lane: Path | None) -> CapCgroup | None:
    """The lane's cgroup for `controller`: in its v2 cgroup when the controller can be enabled down
    to it, else a folder in the controller's v1 hierarchy, else None (the fallback enforces it)."""
    if os.environ.get(containment.ENV, "").strip().lower() in ("off", "none", "0", "no"):
        return None
    if v2_lane is not None and _enable_v2(controller, v2_lane):
        return CapCgroup(controller, 2, v2_lane, owned=False)
    return _v1_folder(controller, repo_key, lane_id)


def _enable_v2(controller: str, lane: Path) -> bool:
    """Enable `controller` from the lanes' own cgroup down to `lane` (the lane's parents)."""
    top = next((p for p in lane.parents if p.name == containment.TOP), None)
    if top is None:
        return False
    levels = [top.parent, top, *[p for p in reversed(lane.parents) if top in p.parents]]
    try:
        if controller not in (top.parent / "cgroup.controllers").read_text().split():
            return False
        for level in levels:
            if controller not in (level / "cgroup.subtree_control").read_text().split():
                (level / "cgroup.subtree_control").write_text(f"+{controller}")
    except OSError as exc:
        log.info("cgroup v2 %s not available for lanes: %s", controller, exc)
        return False
    return (lane / _LIMIT_FILES[(2, controller)]).exists()


def _v1_folder(controller: str, repo_key: str, lane_id: str) -> CapCgroup | None:
    for kind, mount, options in containment.mounts():
        if kind != "cgroup" or controller not in options.split(","):
            continue
        base = mount / containment.own_path(controller).lstrip("/") / containment.TOP
        path = base / containment.cgroup_name(repo_key, lane_id)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.info("cgroup v1 %s hierarchy %s not writable: %s", controller, mount, exc)
            continue
        if (path / _LIMIT_FILES[(1, controller)]).exists():
            return CapCgroup(controller, 1, path)
        with contextlib.suppress(OSError):
            path.rmdir()
    return None


def remove_lane_folders(repo_key: str, lane_id: str) -> None:
    """Remove the lane's (empty) caps folders in every v1 hierarchy, found by their derived path.

    Only `rmdir`, which the kernel refuses for a cgroup with members: nothing here can hurt a
    process, and nothing is read from a file an agent could edit.
    """
    for kind, mount, options in containment.mounts():
        mine = [c for c in CONTROLLERS if c in options.split(",")]
        if kind != "cgroup" or not mine:
            continue
        base = mount / containment.own_path(mine[0]).lstrip("/") / containment.TOP
        folder = base / containment.cgroup_name(repo_key, lane_id)
        if folder.is_dir():
            CapCgroup(mine[0], 1, folder).remove()


def preexec(procs_files: Sequence[Path], *, nice: int, nproc: int | None) -> Callable[[], None]:
    """A `preexec_fn` that joins every cgroup, lowers the priority and sets RLIMIT_NPROC.

    Runs between fork and exec, so it only makes system calls on values computed here: no
    imports, no allocation-heavy work. A failure cannot be reported from the child; the supervisor
    checks membership after the spawn and records what did not hold.
    """
    import resource

    targets = [os.fsencode(path) for path in procs_files]
    setrlimit, limit_kind = resource.setrlimit, resource.RLIMIT_NPROC

    def run() -> None:
        for target in targets:
            try:
                fd = os.open(target, os.O_WRONLY)
            except OSError:
                continue
            try:
                os.write(fd, b"0")
            except OSError:
                pass
            finally:
                os.close(fd)
        if nice > 0:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, 0, nice)
        if nproc is not None:
            with contextlib.suppress(OSError, ValueError):
                setrlimit(limit_kind, (nproc, nproc))

    return run


def user_process_count(uid: int | None = None) -> int:
    """Processes the user owns now: RLIMIT_NPROC counts them all, not the lane's alone."""
    uid = os.getuid() if uid is None else uid
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count
