"""What the Meters pane gets each tick beyond the engine's machine figures: the caps and the lock counts.

The pane is given data and fetches nothing. The governor's caps (`governor_summary`: each cap, its
value and the mechanism that enforces it here) read the machine's cgroup mounts, which do not change
from one tick to the next: they are computed once per config object — at start, and again only when
the engine holds a reloaded config — in a worker thread. The lock counts come from the lane statuses
the screen already holds (`LaneStatus.locks`), so they cost nothing; so do the gates' waits
(`LaneStatus.gate_wait`, read from the lane's events with the lock counts), whose length is counted
here against the wall clock at each tick; and so does each live agent's context meter (`LaneStatus.context`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lanes_tui.engine import Config, LaneStatus

log = logging.getLogger(__name__)

Summary = Callable[[Config], list[dict[str, str]]]


def governor_summary(config: Config) -> list[dict[str, str]]:
    """The engine's `governor_summary`, imported on the first poll (after the first frame), not with the screen."""
    from lanes_tui.engine import governor_summary as summary

    return summary(config)


class GovernorCaps:
    """The caps list for the Meters pane, computed once per config object.

    `summary` is the engine's `governor_summary` unless a test gives another (looked up at each
    computation, so a test may also replace the module's name).
    """

    def __init__(self, summary: Summary | None = None) -> None:
        self._summary = summary
        self._config: Config | None = None
        self._caps: list[dict[str, str]] = []

    async def for_config(self, config: Config) -> list[dict[str, str]]:
        """The caps of `config`; the same list again until the engine holds another config object."""
        if config is self._config:
            return self._caps
        self._config = config
        summary = self._summary or governor_summary
        try:
            self._caps = await asyncio.to_thread(summary, config)
        except Exception as exc:  # a view: no error reading the cgroups may end the dashboard's worker
            log.warning("the governor's caps could not be read: %s", exc)
            self._caps = []
        return self._caps


def lock_counts(lanes: Iterable[LaneStatus]) -> dict[str, int]:
    """Lane id → heavy runs through `lanes-tui lock`, for lanes with at least one."""
    return {lane.id: lane.locks for lane in lanes if lane.locks >= 1}


def gate_waits(lanes: Iterable[LaneStatus], now: float) -> dict[str, str]:
    """Lane id → `load 5.1 > 4.0, 42s` for each lane whose gates wait for the load or a heavy slot."""
    return {lane.id: text for lane in lanes if (text := lane.gate_wait_text(now))}


def contexts(lanes: Iterable[LaneStatus]) -> dict[str, dict[str, Any]]:
    """Lane id → its context meter (used, window, fraction, near) for each live lane whose provider
    reports one: an ended agent's context fills nothing any more."""
    return {lane.id: {"used": meter.used, "window": meter.window, "fraction": meter.fraction, "near": meter.near}
            for lane in lanes if lane.live and (meter := lane.context) is not None}


def meters_mapping(machine: Mapping[str, Any], caps: list[dict[str, str]],
                   lanes: Iterable[LaneStatus], now: float | None = None) -> dict[str, Any]:
    """The engine's machine figures with `caps`, `locks`, `gate_waits` and `contexts` added
    (`MetersPane.update_machine`'s keys); `now` is the wall clock the waits are counted to (this moment
    when None)."""
    lanes = list(lanes)
    return {**machine, "caps": caps, "locks": lock_counts(lanes),
            "gate_waits": gate_waits(lanes, time.time() if now is None else now), "contexts": contexts(lanes)}
