"""When the engine's tick scans which lanes and when it reconciles: inotify, pidfds and the timers.

A part of `live.engine.Engine`. inotify names the lanes whose files changed (`lane_inotify`), so only
those are scanned, plus the followed lanes whose output grew; a slow full scan (`full_scan_s`) backs
it up, and without inotify every tick scans every lane. Reconcile, which reads every record, is due
when a supervisor can have died: its pidfd fired (`liveness`), a lane in a supervised state has no
live supervisor here, or a slow timer (`reconcile_every_s` when polling, `idle_reconcile_s` when
inotify and pidfds say when it is needed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.reconcile import SUPERVISED_STATES
from lanes_tui.engine.live.lane_inotify import LaneWatch
from lanes_tui.engine.live.liveness import SupervisorLiveness
from lanes_tui.engine.live.watch import Watched
from lanes_tui.engine.state.events import EngineEvent, LaneChanged, LaneRemoved
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

__all__ = ["LIVENESS_POLL_S", "WatchSchedule"]

log = logging.getLogger(__name__)

#: Seconds between two liveness checks of the supervisors followed without a pidfd (one /proc read each).
LIVENESS_POLL_S = 1.0

#: Files whose change can mean a supervisor started, ended or was replaced.
_LIVENESS_FILES = frozenset({"lane.json", "supervisor.json", "receipt.json"})


class WatchSchedule:
    """`use_inotify` / `use_pidfd`: False forces the polling paths (tests, odd filesystems)."""

    def __init__(self, paths: StatePaths, store: LaneStore, *, reconcile_every_s: float, idle_reconcile_s: float,
                 full_scan_s: float, use_inotify: bool, use_pidfd: bool) -> None:
        self.paths = paths
        self.store = store
        self.reconcile_every_s = reconcile_every_s
        self.idle_reconcile_s = idle_reconcile_s
        self.full_scan_s = full_scan_s
        self.use_inotify = use_inotify
        self.last_reconcile = 0.0
        self.last_full_scan = 0.0
        self.last_liveness_poll = 0.0
        self.lane_watch: LaneWatch | None = None
        self.liveness = SupervisorLiveness(paths.repo, self._supervisor_ended, use_pidfd=use_pidfd)
        self.reconcile_wanted = False

    def start(self, now: float) -> None:
        """After the first reconcile, before the first scan: nothing falls between."""
        self.last_reconcile = self.last_full_scan = now
        watch = LaneWatch(self.paths.lanes, use_inotify=self.use_inotify)
        self.lane_watch = watch if watch.start() else None

    def close(self) -> None:
        self.liveness.close()
        if self.lane_watch is not None:
            self.lane_watch.close()
            self.lane_watch = None

    def changed_lanes(self, now: float, synced: set[str], followed: Collection[str],
                      output_grew: Callable[[], set[str]]) -> tuple[set[str] | None, set[str]]:
        """The lanes to scan (None: all) and those whose supervisor must be looked up again; `synced`:
        the lanes a remote mirror's sync changed (inotify may not have said so yet)."""
        if now - self.last_liveness_poll >= LIVENESS_POLL_S:
            self.last_liveness_poll = now
            if self.liveness.poll_dead():  # only where pidfds are unavailable
                self.reconcile_wanted = True
            if self.liveness.poll_stopped():  # a SIGSTOPped supervisor: unreachable, its deadline kept
                self.reconcile_wanted = True
        if self.lane_watch is None:
            return None, synced
        changes = self.lane_watch.drain()
        only: set[str] = set()
        recheck: set[str] = set()
        for lane_id, names in changes.lanes.items():
            if names & _LIVENESS_FILES:
                recheck.add(lane_id)
            if names - {"output.log"} or lane_id in followed:
                only.add(lane_id)
        only |= output_grew()
        only |= synced
        recheck |= synced
        if changes.rescan or now - self.last_full_scan >= self.full_scan_s:
            self.last_full_scan = now
            return None, recheck
        return only, recheck

    def reconcile_due(self, now: float) -> bool:
        """Is reconcile due now? If so it counts as done (the caller runs it)."""
        period = self.reconcile_every_s if self.lane_watch is None else self.idle_reconcile_s
        if self.reconcile_wanted or now - self.last_reconcile >= period:
            self.last_reconcile, self.reconcile_wanted = now, False
            return True
        return False

    def follow_supervisors(self, events: list[EngineEvent], recheck: set[str],
                           watched: Mapping[str, Watched]) -> None:
        """Keep a pidfd on the supervisor of each lane in a supervised state; a lane in such a state
        whose supervisor is not alive now is what reconcile settles, so it is asked for."""
        for event in events:
            if isinstance(event, LaneRemoved):
                self.liveness.untrack(event.lane_id)
            elif isinstance(event, LaneChanged):
                recheck.add(event.lane_id)
        for lane_id in recheck:
            seen = watched.get(lane_id)
            status = seen.status if seen is not None else None
            if status is None or status.state not in SUPERVISED_STATES:
                self.liveness.untrack(lane_id)
            elif not self.liveness.track(lane_id) and self._supervised_here(lane_id):
                self.reconcile_wanted = True

    def _supervised_here(self, lane_id: str) -> bool:
        """Is the lane's supervisor on this machine? A remote lane has none here: reconcile leaves it
        alone, so asking for one would only cost a reconcile every time its mirror changes."""
        try:
            return self.store.read(lane_id).runner == "local"
        except LanesError:
            return True  # a record that cannot be read: reconcile looks (and skips it)

    def _supervisor_ended(self, lane_id: str) -> None:
        log.info("the supervisor of %s ended: reconcile", lane_id)
        self.reconcile_wanted = True
