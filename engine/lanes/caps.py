"""A lane's caps — CPU, memory, processes, priority, spend — and which mechanism enforces each here.

One hungry agent (a stress test, a suite with 32 workers, a runaway build) used to take the machine
from the other lanes and from the lead. Every lane now runs under caps sized from the machine
(`[lanes] cpu / memory / pids / nice` in the config, `run --cpu/--memory/--pids` per lane):

* **cpu** — percent of one core, by the cgroup cpu controller (`cpu.max` / `cpu.cfs_quota_us`);
  without one only `nice` holds the lane back, and `doctor` says so;
* **memory** — bytes, by the cgroup memory controller (the kernel OOM-kills inside the lane, not
  across the machine), else the supervisor's sampler on the tree's summed RSS (stop at the cap);
* **pids** — processes, by the cgroup pids controller (forks past it fail), else the sampler, and
  `RLIMIT_NPROC` where the kernel honours it (not for root; it counts all the user's processes);
* **nice** — the whole lane at a lower CPU priority (and best-effort I/O priority 7);
* **spend** — `max_cost_usd` / `max_tokens`: the lane pauses and asks the lead (`lanes.spend`).

A lane without a memory cap is refused unless the lead allowed it (`--allow-uncapped`,
`[lanes] allow_uncapped = true`): that is the cap whose absence takes the machine down.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config, LanesSettings
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.sizes import format_bytes, format_percent, parse_bytes, parse_percent
from lanes_tui.engine.procs import caps_cgroup, cgroup

__all__ = ["LaneCaps", "check_capped", "governor_summary", "lane_caps", "lane_timeouts", "mechanisms",
           "sampler_available"]

#: The keys `run` may set per lane (the same names as in `[lanes]`).
CAP_KEYS = ("cpu", "memory", "pids", "nice", "max_cost_usd", "max_tokens", "allow_uncapped", "allow_uncontained")
UNCAPPED_FIX = ("set a memory cap ([lanes] memory = \"4G\" or run --memory 4G), or run uncapped on purpose "
                "with --allow-uncapped or [lanes] allow_uncapped = true")


@dataclass(frozen=True)
class LaneCaps:
    """The caps one lane runs under; 0 turns a cap off."""

    cpu: float
    memory: int
    pids: int
    nice: int
    allow_uncapped: bool = False
    max_cost_usd: float = 0.0
    max_tokens: int = 0
    #: Run even where the kernel cannot confine the lane's writes (`lanes.confine`).
    allow_uncontained: bool = False

    def shown(self, cap: str) -> str:
        """The value as the lead reads it: `150%`, `2.0 GiB`, `512`, `off`."""
        value = getattr(self, cap)
        if not value:
            return "off"
        if cap == "cpu":
            return format_percent(value)
        return format_bytes(value) if cap == "memory" else str(value)


def lane_caps(settings: LanesSettings, overrides: Mapping[str, Any] | None = None) -> LaneCaps:
    """The config's caps with the lane's own (`run --cpu …`, kept in the record) over them.

    The overrides come back from `lane.json`, which anyone can edit: each is parsed like the
    command line's, and a wrong one is a LanesError naming it.
    """
    caps = LaneCaps(settings.cpu, settings.memory_bytes, settings.pids, settings.nice,
                    settings.allow_uncapped, settings.max_cost_usd, settings.max_tokens,
                    settings.allow_uncontained)
    values: dict[str, Any] = {}
    for key, value in (overrides or {}).items():
        if key not in CAP_KEYS or value is None:
            continue
        values[key] = _override(key, value)
    return replace(caps, **values)


def _override(key: str, value: Any) -> Any:
    bad = LanesError(f"the lane's cap {key}={value!r} is not valid", "give it as `run` takes it, e.g. --memory 4G")
    if key in ("allow_uncapped", "allow_uncontained"):
        if not isinstance(value, bool):
            raise bad
        return value
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise bad
    if key == "cpu":
        return parse_percent(value, "--cpu")
    if key == "memory":
        return parse_bytes(value, "--memory")
    if key == "max_cost_usd":
        if isinstance(value, str) or not 0 <= float(value) < 1e9:
            raise bad
        return float(value)
    if not isinstance(value, int) or value < 0 or (key == "nice" and value > 19):
        raise bad
    return value


#: The `[lanes]` time limits `run --timeout / --idle-timeout` may set per lane, kept in `LaneRecord.caps`
#: with the caps (so `recover --relaunch` keeps them too).
TIMEOUT_KEYS = ("timeout_s", "idle_timeout_s")


def lane_timeouts(settings: LanesSettings, overrides: Mapping[str, Any] | None = None) -> LanesSettings:
    """`[lanes]` with the lane's own wall-clock and idle limits over it; a wrong one (lane.json is
    anyone's to edit) is a LanesError naming it. The early warning follows the lane's idle limit."""
    values: dict[str, Any] = {}
    for key in TIMEOUT_KEYS:
        value = (overrides or {}).get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e9 \
                or (key == "timeout_s" and value == 0):
            raise LanesError(f"the lane's {key}={value!r} is not valid",
                             "give it as `run` takes it, e.g. --timeout 600")
        values[key] = float(value)
    return replace(settings, **values)


def sampler_available() -> bool:
    """The fallback reads each process's memory from /proc; without it nothing watches memory."""
    return Path("/proc/self/statm").exists()


def mechanisms(*, sampler: bool | None = None) -> dict[str, str]:
    """Which mechanism would enforce each cap for a new lane on this machine (doctor, Meters, run).

    A prediction, read-only: v2 counts when the controller is offered to the lanes' cgroup and may
    be enabled there (no processes of its own, or the root); v1 when the hierarchy is writable.
    """
    sampler = sampler_available() if sampler is None else sampler
    found: dict[str, str] = {}
    for controller in caps_cgroup.CONTROLLERS:
        found[controller] = _kernel_mechanism(controller) or ""
    fallback = "sampler (summed RSS, checked every sample_s)" if sampler else ""
    found["memory"] = found["memory"] or fallback
    nproc = "RLIMIT_NPROC" if os.geteuid() != 0 else ""
    pids_fallback = " + ".join(p for p in (nproc, "sampler (process count)" if sampler else "") if p)
    found["pids"] = found["pids"] or pids_fallback
    found["cpu"] = found["cpu"] or "nice only (no cpu controller)"
    found["nice"] = "setpriority + ionice"
    return found


def _kernel_mechanism(controller: str) -> str | None:
    if os.environ.get(cgroup.ENV, "").strip().lower() in ("off", "none", "0", "no"):
        return None
    for kind, mount, _ in cgroup.mounts():
        if kind == "cgroup2":
            own = mount / cgroup.own_path(None).lstrip("/")
            try:
                offered = controller in (own / "cgroup.controllers").read_text().split()
                empty = own == mount or not (own / "cgroup.procs").read_text().split()
                enabled = controller in (own / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if offered and (empty or enabled) and os.access(own, os.W_OK):
                return caps_cgroup.CapCgroup(controller, 2, own).mechanism
    for kind, mount, options in cgroup.mounts():
        if kind == "cgroup" and controller in options.split(","):
            own = mount / cgroup.own_path(controller).lstrip("/")
            if os.access(own, os.W_OK):
                return caps_cgroup.CapCgroup(controller, 1, own).mechanism
    return None


def check_capped(caps: LaneCaps, *, sampler: bool | None = None) -> None:
    """Refuse a lane nothing would hold in memory, unless the lead allowed it (one line, with the fix)."""
    if caps.allow_uncapped:
        return
    if caps.memory == 0:
        raise LanesError("the lane would run without a memory cap (memory = off): one agent could take "
                         "all of the machine's memory", UNCAPPED_FIX)
    if not mechanisms(sampler=sampler)["memory"]:
        raise LanesError("no mechanism on this machine can enforce the memory cap (no writable cgroup memory "
                         "controller, and no /proc for the sampler)", UNCAPPED_FIX)


def governor_summary(config: Config, overrides: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """Each cap with its value and mechanism, for `doctor` and the Meters pane."""
    caps = lane_caps(config.lanes, overrides)
    found = mechanisms()
    lines = [{"cap": cap, "value": caps.shown(cap), "mechanism": found[cap] if getattr(caps, cap) else "off"}
             for cap in ("cpu", "memory", "pids", "nice")]
    spend = [f"${caps.max_cost_usd:.2f}" if caps.max_cost_usd else "",
             f"{caps.max_tokens:,} tokens" if caps.max_tokens else ""]
    lines.append({"cap": "spend", "value": " / ".join(s for s in spend if s) or "off",
                  "mechanism": "pause and ask the lead" if any(spend) else "off"})
    if caps.allow_uncapped:
        lines.append({"cap": "uncapped", "value": "allowed", "mechanism": "allow_uncapped"})
    return lines
