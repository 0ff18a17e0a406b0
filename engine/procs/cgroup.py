"""Each lane's agent in a cgroup of its own, so stopping a lane stops every process it started.

A process group, the supervisor's child subreaper and the `LANES_LANE` environment marker find most
descendants, but not one that double-forks, calls `setsid` and clears its environment (`env -i`)
after the supervisor died: it belongs to no group of ours, has no marker, and init adopted it. A
cgroup keeps it: membership is inherited by every child and cannot be left without write access
to the cgroup tree, so "kill everything in the lane's cgroup" is exact.

Mechanisms, best first (`detect`):

* **cgroup-v2**: a directory under a writable cgroup2 mount (a delegated subtree, or the root when
  running as root); stopped with `cgroup.kill` (Linux 5.14+), which the kernel applies atomically,
  forks in flight included.
* **cgroup-v1**: a directory in the `freezer` hierarchy; stopped by freezing it (no process can
  fork while frozen), SIGKILLing every member, and thawing it so the kills land.
* **none**: no writable cgroup. The supervisor keeps to its process group, subreaper and
  environment-marker sweep, and `doctor` says so.

`LANES_TUI_CGROUP=auto|v2|v1|off` forces a choice (tests exercise each path; a lead can turn it
off). The agent joins its cgroup between fork and exec: the child writes "0" (itself) into each
`cgroup.procs` before its own code runs, so not even its first fork escapes.

A cgroup's path is derived, never taken on trust: `lanes-tui/<repo key>/<lane id>` under a
mount the kernel lists in `/proc/self/mountinfo`. The supervisor records where it made the
cgroup (`cgroup.json` in the lane's state folder) because the base depends on the cgroup the
supervisor itself ran in; anything read back is checked against that shape before a single
process is killed (an agent can edit files in the state folder).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.core.atomic import read_json, write_json_atomic

log = logging.getLogger(__name__)

ENV = "LANES_TUI_CGROUP"
MECHANISMS = ("cgroup-v2", "cgroup-v1", "none")
TOP = "lanes-tui"
RECORD = "cgroup.json"
_MOUNTINFO = Path("/proc/self/mountinfo")
_SELF_CGROUP = Path("/proc/self/cgroup")


@dataclass(frozen=True)
class Support:
    """What this machine offers: the mechanism, the base folder lane cgroups go under, and why."""

    mechanism: str
    base: Path | None
    reason: str

    def describe(self) -> str:
        if self.mechanism == "none":
            return f"none ({self.reason}); fallback: process group + child subreaper + environment marker sweep"
        return f"{self.mechanism} under {self.base} ({self.reason})"


def _mounts() -> list[tuple[str, Path, str]]:
    """(filesystem type, mount point, super options) of every cgroup mount, from mountinfo."""
    found: list[tuple[str, Path, str]] = []
    try:
        lines = _MOUNTINFO.read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and tail and tail[0] in ("cgroup", "cgroup2"):
            found.append((tail[0], Path(fields[4].replace("\\040", " ")), tail[-1] if len(tail) > 2 else ""))
    return found


def _own_path(controller: str | None) -> str:
    """This process's cgroup path in the v2 hierarchy (controller None) or a v1 controller's."""
    try:
        lines = _SELF_CGROUP.read_text().splitlines()
    except OSError:
        return "/"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (controller is None and controllers == "") or (controller and controller in controllers.split(",")):
            return path
    return "/"


def _writable_base(mount: Path, own: str) -> Path | None:
    """`<mount>/<own cgroup>/lanes-tui`, if a folder can be made there (probed, then left in place)."""
    base = mount / own.lstrip("/") / TOP
    try:
        base.mkdir(parents=False, exist_ok=True)
    except OSError:
        return None
    return base if os.access(base, os.W_OK) else None


def detect(prefer: str | None = None) -> Support:
    """The best mechanism here (or the one `prefer` / LANES_TUI_CGROUP names, if it is available)."""
    choice = (prefer or os.environ.get(ENV) or "auto").strip().lower()
    if choice in ("off", "none", "0", "no"):
        return Support("none", None, f"turned off by {ENV}={choice}")
    if choice not in ("auto", "v2", "v1"):
        return Support("none", None, f"{ENV}={choice!r} is not auto, v2, v1 or off")
    mounts = _mounts()
    tried: list[str] = []
    if choice in ("auto", "v2"):
        for kind, mount, _ in mounts:
            if kind != "cgroup2":
                continue
            base = _writable_base(mount, _own_path(None))
            if base is None:
                tried.append(f"{mount} is not writable")
            elif not _probe_v2(base):
                tried.append(f"{mount} has no cgroup.kill (Linux < 5.14)")
            else:
                return Support("cgroup-v2", base, f"cgroup2 mount {mount}")
        if not any(kind == "cgroup2" for kind, _, _ in mounts):
            tried.append("no cgroup2 mount")
    if choice in ("auto", "v1"):
        freezer = [m for kind, m, opts in mounts if kind == "cgroup" and "freezer" in opts.split(",")]
        if not freezer:
            tried.append("no cgroup v1 freezer hierarchy")
        for mount in freezer:
            base = _writable_base(mount, _own_path("freezer"))
            if base is not None:
                return Support("cgroup-v1", base, f"cgroup v1 freezer at {mount}")
            tried.append(f"{mount} is not writable")
    return Support("none", None, "; ".join(tried) or "no cgroup found")


def _probe_v2(base: Path) -> bool:
    probe = base / f".probe-{os.getpid()}"
    try:
        probe.mkdir(exist_ok=True)
        return (probe / "cgroup.kill").exists()
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


def cgroup_name(repo_key: str, lane_id: str) -> str:
    """`<repo key>/<lane id>` below the `lanes-tui` folder: derived, so it can be checked."""
    return f"{repo_key}/{lane_id}"


@dataclass(frozen=True)
class LaneCgroup:
    """One lane's cgroup: a folder under a base of `detect()`."""

    mechanism: str
    path: Path

    @classmethod
    def create(cls, support: Support, repo_key: str, lane_id: str) -> LaneCgroup | None:
        """Make the lane's cgroup; None when the machine offers none (or making it fails: logged)."""
        if support.mechanism == "none" or support.base is None:
            return None
        path = support.base / cgroup_name(repo_key, lane_id)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.warning("cannot make the lane cgroup %s: %s", path, exc)
            return None
        return cls(support.mechanism, path)

    # joining --------------------------------------------------------------------------------------
    def joiner(self) -> Callable[[], None]:
        """A `preexec_fn` that moves the child into this cgroup before it runs anything.

        Runs between fork and exec, so it only makes system calls on pre-computed bytes: no
        imports, no allocation-heavy work, nothing that needs a lock another thread may hold.
        """
        target = os.fsencode(self.path / "cgroup.procs")
        flags = os.O_WRONLY

        def join() -> None:
            # A failure cannot be reported from here; the supervisor checks membership after the
            # spawn (`pids()`) and records a lane that runs uncontained.
            try:
                fd = os.open(target, flags)
            except OSError:
                return
            try:
                os.write(fd, b"0")
            except OSError:
                pass
            finally:
                os.close(fd)

        return join

    def add(self, pid: int) -> None:
        """Move a running process in (its future children follow; ones it already has do not)."""
        (self.path / "cgroup.procs").write_text(str(pid))

    # looking ----------------------------------------------------------------------------------------
    def pids(self) -> list[int]:
        """The processes in the cgroup now (empty when it is gone)."""
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split() if p.isdigit()]

    # stopping ---------------------------------------------------------------------------------------
    def kill(self, timeout_s: float = 5.0) -> list[int]:
        """SIGKILL every process in the cgroup and wait until it is empty; returns who was there."""
        members = self.pids()
        if not members:
            return []
        log.info("killing cgroup %s (%s): %s", self.path, self.mechanism, members)
        if self.mechanism == "cgroup-v2":
            with contextlib.suppress(OSError):
                (self.path / "cgroup.kill").write_text("1")
        else:
            self._freeze_and_kill(timeout_s)
        end = time.monotonic() + timeout_s
        while self.pids() and time.monotonic() < end:
            time.sleep(0.01)
        if self.pids():
            log.warning("cgroup %s still has %s after %.1fs", self.path, self.pids(), timeout_s)
        return members

    def _freeze_and_kill(self, timeout_s: float) -> None:
        """v1: freeze (no fork can race the kill), SIGKILL each member, thaw so the kills land."""
        state = self.path / "freezer.state"
        try:
            state.write_text("FROZEN")
            end = time.monotonic() + timeout_s
            while state.read_text().strip() != "FROZEN" and time.monotonic() < end:
                time.sleep(0.005)
            for _ in range(3):  # members found frozen cannot fork; a few rounds cover a late join
                pids = self.pids()
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
        finally:
            with contextlib.suppress(OSError):
                state.write_text("THAWED")

    # pausing ----------------------------------------------------------------------------------------
    def freeze(self, timeout_s: float = 5.0) -> bool:
        """Pause every process in the cgroup (a spend cap waits for the lead): unlike SIGSTOP on
        listed pids, a freeze also holds a child forked a moment ago, and the agent cannot see or
        undo it. True once the kernel reports the cgroup frozen within `timeout_s`; False when the
        file cannot be written or the freeze did not complete (the caller falls back to signals and
        must still `thaw`)."""
        v2 = self.mechanism == "cgroup-v2"
        control = self.path / ("cgroup.freeze" if v2 else "freezer.state")
        try:
            control.write_text("1" if v2 else "FROZEN")
        except OSError as exc:
            log.warning("cannot freeze cgroup %s: %s", self.path, exc)
            return False
        end = time.monotonic() + timeout_s
        while True:
            try:
                if v2:
                    frozen = "frozen 1" in (self.path / "cgroup.events").read_text().splitlines()
                else:
                    frozen = control.read_text().strip() == "FROZEN"
            except OSError:
                frozen = False
            if frozen:
                return True
            if time.monotonic() >= end:
                log.warning("cgroup %s not frozen after %.1fs", self.path, timeout_s)
                return False
            time.sleep(0.005)

    def thaw(self) -> None:
        """Let a frozen cgroup run again (a no-op when it is not frozen or is gone)."""
        v2 = self.mechanism == "cgroup-v2"
        control = self.path / ("cgroup.freeze" if v2 else "freezer.state")
        try:
            control.write_text("0" if v2 else "THAWED")
        except OSError as exc:
            if self.path.exists():
                log.warning("cannot thaw cgroup %s: %s", self.path, exc)

    def remove(self) -> bool:
        """Remove the (empty) cgroup folder, and its repository's folder once no lane is left in it;
        False if the lane's cgroup still has members or is already gone."""
        try:
            self.path.rmdir()
        except OSError:
            return False
        with contextlib.suppress(OSError):  # busy with another lane of the repository: it stays
            self.path.parent.rmdir()
        return True

    # the record in the lane's state folder ----------------------------------------------------------
    def to_json(self) -> dict[str, str]:
        return {"mechanism": self.mechanism, "path": str(self.path)}

    @classmethod
    def from_record(cls, data: object, repo_key: str, lane_id: str) -> LaneCgroup | None:
        """The cgroup a record names, only if it has exactly the shape this lane's cgroup must have:
        `<a cgroup mount>/…/lanes-tui/<repo key>/<lane id>` with a known mechanism. Anything else is
        refused (None, logged): an edited record must never aim a kill at other processes."""
        if not isinstance(data, dict):
            return None
        mechanism, raw = data.get("mechanism"), data.get("path")
        if mechanism not in MECHANISMS[:2] or not isinstance(raw, str):
            return None
        path = Path(raw)
        expected_tail = (TOP, *cgroup_name(repo_key, lane_id).split("/"))
        if ".." in path.parts or tuple(path.parts[-3:]) != expected_tail:
            log.warning("refusing cgroup record for %s: %s is not its cgroup", lane_id, raw)
            return None
        kind = "cgroup2" if mechanism == "cgroup-v2" else "cgroup"
        if not any(k == kind and _inside(path, mount) for k, mount, _ in _mounts()):
            log.warning("refusing cgroup record for %s: %s is not on a %s mount", lane_id, raw, kind)
            return None
        return cls(mechanism, path)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return path != root


def write_record(lane_dir: Path, cgroup: LaneCgroup) -> None:
    """Note where the lane's cgroup is, for a stop after the supervisor is gone."""
    write_json_atomic(lane_dir / RECORD, cgroup.to_json())


def read_record(lane_dir: Path, repo_key: str, lane_id: str) -> LaneCgroup | None:
    try:
        data = read_json(lane_dir / RECORD)
    except (OSError, ValueError):  # read_json turns nesting past its depth limit into ValueError too
        return None
    return LaneCgroup.from_record(data, repo_key, lane_id)


def kill_recorded(lane_dir: Path, repo_key: str, lane_id: str, timeout_s: float = 5.0) -> list[int]:
    """Kill and remove the lane's cgroup if the supervisor recorded one (and it checks out)."""
    cgroup = read_record(lane_dir, repo_key, lane_id)
    if cgroup is None:
        return []
    killed = cgroup.kill(timeout_s)
    cgroup.remove()
    return killed


def pids_alive(pids: Iterable[int]) -> list[int]:
    """Which of these pids still exist (zombies count as gone)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[-1].split()[0] != b"Z":
                    alive.append(pid)
        except OSError:
            continue
    return alive


#: For the caps' controllers (`procs.caps_cgroup`), which look in the same mounts and own paths.
mounts = _mounts
own_path = _own_path
