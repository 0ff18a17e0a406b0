"""Machine meters for the dashboard: CPU, memory, load, free disk, heavy slots, lanes running, spend.

One cheap call per tick for the whole machine; per-lane figures come from the supervisors' samples,
never from a sweep per lane.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import psutil

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core import slots
from lanes_tui.engine.state.paths import heavy_slot_dir
from lanes_tui.engine.state.status import LaneStatus

RUNNING_STATES = frozenset({"launching", "running", "waiting", "checking"})


def machine_meters(config: Config, lanes: Iterable[LaneStatus]) -> dict[str, Any]:
    lanes = list(lanes)
    holders = slots.holders(heavy_slot_dir())
    root = _existing_parent(config.lanes.worktree_root)
    spend = sum(float(lane.cost_usd or 0.0) for lane in lanes)
    tokens = 0
    for lane in lanes:
        value = lane.tokens
        if isinstance(value, Mapping):
            tokens += int(value.get("total", 0) or 0)
        elif isinstance(value, int | float):
            tokens += int(value)
    return {
        "cpu_percent": psutil.cpu_percent(interval=None),
        "mem_percent": psutil.virtual_memory().percent,
        "load1": os.getloadavg()[0],
        "cores": os.cpu_count() or 1,
        "disk_free_bytes": shutil.disk_usage(root).free,
        "slots_used": len(holders),
        "slots_total": config.gates.slots,
        "slot_holders": holders,
        "running": sum(1 for lane in lanes if lane.state in RUNNING_STATES),
        "queued": sum(1 for lane in lanes if lane.state == "queued"),
        "max_parallel": config.lanes.max_parallel,
        "spend_usd": round(spend, 4),
        "tokens": tokens,
    }


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
