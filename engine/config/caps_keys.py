"""The governor's keys of `[lanes]` (cpu, memory, pids, nice, allow_uncapped, spend caps), read.

Split from `settings` (which calls it while reading `[lanes]`) so the parser stays one table per
concern: sizes and percentages go through `core.sizes`, the lead's words, and every mistake is the
parser's own ConfigError naming key, line and fix.
"""

from __future__ import annotations

from typing import Any, NoReturn, Protocol

from lanes_tui.engine.config.key_lines import shown
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.sizes import parse_bytes, parse_percent

__all__ = ["parse_caps"]


class CapsChecks(Protocol):
    """What `parse_caps` needs of the config parser (`settings._Parser`)."""

    def fail(self, key: str, what: str, fix: str) -> NoReturn: ...
    def integer(self, key: str, value: object, *, minimum: int) -> int: ...
    def number(self, key: str, value: object, *, positive: bool) -> float: ...


def parse_caps(checks: CapsChecks, raw: dict[str, Any]) -> dict[str, Any]:
    """The governor's keys present in `raw` (the `[lanes]` table), parsed into LanesSettings values."""
    values: dict[str, Any] = {}
    for key, parse in (("cpu", parse_percent), ("memory", parse_bytes)):
        if key in raw:
            value = raw[key]
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                checks.fail(f"lanes.{key}", f"must be a string or a number, got {shown(value)}",
                            'write e.g. cpu = "150%" or memory = "4G"')
            try:
                values[key] = parse(value, "the value")
            except LanesError as exc:
                checks.fail(f"lanes.{key}", exc.what, exc.fix or "")
    for key in ("pids", "nice", "max_tokens"):
        if key in raw:
            values[key] = checks.integer(f"lanes.{key}", raw[key], minimum=0)
    if values.get("nice", 0) > 19:
        checks.fail("lanes.nice", f"must be at most 19, got {values['nice']}", "use 0 (the lead's priority) to 19")
    for key in ("allow_uncapped", "allow_uncontained"):
        if key in raw:
            if not isinstance(raw[key], bool):
                checks.fail(f"lanes.{key}", f"must be true or false, got {shown(raw[key])}",
                            f"write {key} = true (no quotes)")
            values[key] = raw[key]
    if "max_cost_usd" in raw:
        values["max_cost_usd"] = checks.number("lanes.max_cost_usd", raw["max_cost_usd"], positive=False)
    return values
