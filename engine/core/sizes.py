"""Cap values as a lead writes them — `150%`, `4G`, `512M` — and as lanes-tui shows them back.

One parser for the config (`[lanes] cpu = "150%"`, `memory = "4G"`) and the command line
(`run --cpu 150% --memory 4G`), so both accept the same words and refuse them the same way. `0` or
`off` turns a cap off (then the lane runs uncapped in that dimension, which `run` refuses unless
the lead allows it: `lanes.caps`).
"""

from __future__ import annotations

import math
import os
import re

from lanes_tui.engine.core.errors import LanesError

__all__ = ["OFF_WORDS", "format_bytes", "format_percent", "machine_cores", "machine_memory",
           "parse_bytes", "parse_percent"]

OFF_WORDS = frozenset({"0", "off", "none", "no"})
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
          "tib": 1 << 40}
_BYTES_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_PERCENT_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(%?)\s*$")
#: Below this a memory cap cannot hold even an agent's interpreter: surely a typo (`4` for `4G`).
MIN_MEMORY_BYTES = 16 << 20


def parse_bytes(value: str | int | float, what: str = "memory") -> int:
    """`4G` → 4294967296 (binary units; `4GB` and `4GiB` mean the same); 0 / `off` → 0 (no cap)."""
    if isinstance(value, bool):
        raise LanesError(f"{what} must be a size like 4G or 512M, not {value}", "write e.g. \"4G\"")
    if isinstance(value, int | float):
        number, unit = float(value), ""
        if not math.isfinite(number) or number < 0:
            raise LanesError(f"{what} {value!r} is out of range", "write a size like 4G or 512M")
    else:
        if value.strip().lower() in OFF_WORDS:
            return 0
        match = _BYTES_RE.match(value)
        if match is None or match.group(2).lower() not in _UNITS:
            raise LanesError(f"{what} {value!r} is not a size", "write a number with K, M, G or T, e.g. 4G or 512M")
        number, unit = float(match.group(1)), match.group(2).lower()
    size = int(number * _UNITS[unit])
    if size == 0:
        return 0
    if size < MIN_MEMORY_BYTES:
        raise LanesError(f"{what} {value!r} is {size:,} bytes: too small to run an agent",
                         "give a size of at least 16M (K, M, G or T after the number), or 0 / off for no cap")
    return size


def parse_percent(value: str | int | float, what: str = "cpu") -> float:
    """`150%` or `150` → 150.0 (percent of one core); 0 / `off` → 0.0 (no cap)."""
    if isinstance(value, bool):
        raise LanesError(f"{what} must be a percentage of one core like 150%, not {value}", "write e.g. \"150%\"")
    if isinstance(value, int | float):
        number = float(value)
    else:
        if value.strip().lower() in OFF_WORDS:
            return 0.0
        match = _PERCENT_RE.match(value)
        if match is None:
            raise LanesError(f"{what} {value!r} is not a percentage of one core",
                             "write e.g. 150% (one and a half cores), or 0 / off for no cap")
        number = float(match.group(1))
    if not math.isfinite(number) or number < 0:
        raise LanesError(f"{what} {value!r} is out of range", "write a percentage of one core, e.g. 50% or 200%")
    if 0 < number < 1:
        raise LanesError(f"{what} {value!r} is less than 1% of a core", "give at least 1%, or 0 / off for no cap")
    return number


def format_bytes(size: int) -> str:
    """4294967296 → `4.0 GiB`; small figures in MiB."""
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GiB"
    return f"{size / (1 << 20):.0f} MiB"


def format_percent(percent: float) -> str:
    return f"{percent:g}%"


def machine_cores() -> int:
    """Cores this process may run on (the affinity mask, so a container's share, not the host's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def machine_memory() -> int:
    """Physical memory in bytes (0 when the platform does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0
