"""The dashboard's conflict radar: the newest report, looked at again only when due or when a lane moved.

A part of `live.engine.Engine`. The engine's scan calls `refresh()` (in its worker thread) before it
reads the lanes, `touch()` when a lane's worktree may have changed and `with_conflicts()` on each
status it builds; `every_s` bounds how often git is asked, and `git.radar` caches the rest. The accept
queue reuses its `radar` (its trial merges), and a queue run marks it `stale`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.radar import Radar, RadarReport, with_conflicts
from lanes_tui.engine.git.ref_stamp import Stamp, ref_stamp
from lanes_tui.engine.state.record_cache import RecordCache
from lanes_tui.engine.state.status import LaneStatus
from lanes_tui.engine.state.store import LaneStore

__all__ = ["RadarWatch"]

log = logging.getLogger(__name__)


class RadarWatch:
    """The newest report, when it was taken, and what may have made it stale."""

    def __init__(self, repo: Path, store: LaneStore, clock: Clock) -> None:
        self.repo = repo
        self.clock = clock
        self.radar = Radar(repo)
        self.records = RecordCache(store)  # twenty records are not re-read every look when none moved
        self.report = RadarReport()
        #: Seconds between two looks at the lanes' worktrees (sooner when a lane's state moved).
        self.every_s = 5.0
        #: Seconds between two looks that ask git about every lane, quiet ones too: what a supervisor's
        #: file watcher missed (its inotify limit reached, a change it cannot see) is found by then.
        self.full_every_s = 60.0
        self.at = float("-inf")
        self.stale = True
        self.states: dict[str, str] = {}
        #: Lanes whose worktree may have changed since the last look (a sample saw files change, or
        #: the record moved); the others are quiet and keep their side (`Radar.scan`).
        self.touched: set[str] = set()
        #: When every lane was last looked at with git, quiet or not.
        self.full_at = float("-inf")
        #: The branches' and worktrees' stamp at the last look that asked git (`git.ref_stamp`).
        self.stamp: Stamp | None = None
        #: Looks that asked git nothing: every lane quiet and the stamp unchanged (the tests read it).
        self.skipped = 0

    def due(self, now: float) -> bool:
        return self.stale or now - self.at >= self.every_s

    def refresh(self) -> set[str]:
        """Look again if due; the lanes whose findings changed (their rows must be read again)."""
        now = self.clock.monotonic()
        if not self.stale and now - self.at < self.every_s:
            return set()
        asked = self.stale
        self.at, self.stale = now, False
        full = now - self.full_at >= self.full_every_s
        records = self.records.all(fresh=full)
        quiet: set[str] = set()
        if not full:
            quiet = {r.id for r in records if self.states.get(r.id) == r.state} - self.touched
        else:
            self.full_at = now
        states_before, self.states = self.states, {r.id: r.state for r in records}
        # Steady: the same lanes in the same states, no supervisor saw files change, no ready lane looked
        # at as it stands (its worktree is read on every look: nothing watches it any more; a ready lane's
        # frozen work is a ref, in the stamp), and no trial merge left for this look (`Radar.pending`).
        steady = (states_before == self.states and not self.touched and not self.radar.unfrozen_ready
                  and not self.radar.pending)
        self.touched.clear()
        stamp = ref_stamp(self.repo)  # taken before git is asked: a change after it shows next time
        if not asked and not full and steady and stamp is not None and stamp == self.stamp:
            self.skipped += 1  # and no branch or worktree moved: git would say what it said last time
            return set()
        self.stamp = stamp
        try:
            report = self.radar.scan(records, quiet)
        except (LanesError, OSError) as exc:
            log.info("the conflict radar could not look: %s", exc)
            self.stamp = None
            return set()
        before, self.report = self.report, report
        if report is before:
            return set()
        return {lane for lane in set(before.conflicts) | set(report.conflicts) if before.of(lane) != report.of(lane)}

    def touch(self, lane_id: str) -> None:
        """The lane's worktree may have changed: the next look asks git about it again."""
        self.touched.add(lane_id)

    def with_conflicts(self, status: LaneStatus) -> LaneStatus:
        """The status with the radar's findings; a lane whose state moved makes the radar look again."""
        if self.states.get(status.id) != status.state:
            self.stale = True
        return with_conflicts(status, self.report)
