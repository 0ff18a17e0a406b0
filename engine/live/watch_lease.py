"""The dashboard's side of the watch lease: the lane on screen is read by its supervisor at the live pace.

A part of `live.engine.Engine`. A supervisor reads a lane's output every `REST_S` while someone
watches it and every `UNWATCHED_REST_S` otherwise (`lanes.cadence`), and only the engine knows
which lanes are watched: the ones whose output it follows (`output_lanes`, the lane on the
dashboard's screen). So each tick, every followed lane whose lease is older than `RENEW_S` gets a
new one of `LEASE_S` through the runner that has it (`Runner.watch`: the supervisor's control socket
here, the lane's actor on its node for a Ray lane). The requests run in the background, one batch at
a time, each bounded by `ASK_TIMEOUT_S`, and never hold the watch loop up; a lane with no supervisor
(ended, queued) refuses, and is simply asked again at the next renewal.

A newly followed lane is asked at the next tick (within `poll_s`): its lease ends the supervisor's
rest under way, so the lane the lead just selected streams at the live pace from then on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.runner import Runner

__all__ = ["LEASE_S", "RENEW_S", "WatchLeases"]

log = logging.getLogger(__name__)

#: How long one lease holds: three renewals may be missed (a busy machine) before the lane slows down.
LEASE_S = 15.0
#: How often a followed lane's lease is renewed.
RENEW_S = 5.0
#: The longest one lease request may take (a cluster node's actor may be slow to answer).
ASK_TIMEOUT_S = 5.0


class WatchLeases:
    """`runner_of`: the runner that has a lane (`remote_tick`); `followed`: the lanes whose output the
    engine follows (`watch.LaneScanner.output_lanes`; None: the engine streams every lane, for a caller
    other than the dashboard, and takes no lease)."""

    def __init__(self, runner_of: Callable[[str], Awaitable[Runner]],
                 followed: Callable[[], set[str] | None]) -> None:
        self.runner_of = runner_of
        self.followed = followed
        self.leased: dict[str, float] = {}  # lane -> when its lease was last asked for (monotonic)
        self._lease_task: asyncio.Task[None] | None = None
        #: Leases asked for, for tests (which wait on it instead of on wall-clock time).
        self.asked = 0

    def soon(self, now: float) -> None:
        """Start one background batch of lease requests for the followed lanes that are due."""
        lanes = self.followed() or set()
        for lane_id in set(self.leased) - lanes:
            del self.leased[lane_id]  # no longer on screen: its lease lapses by itself
        if self._lease_task is not None and not self._lease_task.done():
            return
        due = sorted(lane for lane in lanes if now - self.leased.get(lane, float("-inf")) >= RENEW_S)
        if not due:
            return
        for lane_id in due:
            self.leased[lane_id] = now
        self._lease_task = asyncio.create_task(self._ask_leases(due), name="lanes-engine-watch-leases")

    async def _ask_leases(self, lanes: Collection[str]) -> None:
        for lane_id in lanes:
            self.asked += 1
            try:
                runner = await self.runner_of(lane_id)
                await asyncio.wait_for(runner.watch(lane_id, LEASE_S), ASK_TIMEOUT_S)
            except (LanesError, TimeoutError, OSError) as exc:  # no supervisor: it reads at its own pace
                log.debug("no watch lease for %s: %s", lane_id, exc)
            except Exception:  # a lease is an optimisation: never a reason to stop the watch loop
                log.exception("the watch lease request for %s failed", lane_id)

    async def stop(self) -> None:
        """Wait for a batch under way (each request is bounded by `ASK_TIMEOUT_S`)."""
        task, self._lease_task = self._lease_task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
