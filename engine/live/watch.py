"""The engine's lane scan: what changed in each lane's files, turned into events.

A part of `live.engine.Engine`. A scan looks at a set of lanes (those inotify named, plus the lanes
whose output is followed) or at all of them (the first scan, the slow fallback scan, and every tick
where inotify is unavailable). Per lane it compares the sizes and mtimes it saw last time and
reads only what grew, in a worker thread; the events are queued on the loop thread.

Output is read only for the lanes in `output_lanes` (None: every lane, for callers other than the
dashboard). Setting it records each newly followed lane's output size at once, on the caller's
thread, before the caller loads that lane's tail: the scan then reads on from there, so nothing
between the tail and the stream is lost, and lanes nobody follows cost nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import read_jsonl
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.utf8 import Utf8Stream
from lanes_tui.engine.decisions.ranking import GroupRanks, with_ranks
from lanes_tui.engine.lanes.runner import read_output
from lanes_tui.engine.live.radar_watch import RadarWatch
from lanes_tui.engine.state.events import (
    EngineEvent,
    LaneChanged,
    LaneRemoved,
    MetersSampled,
    OutputAppended,
    StallDetected,
)
from lanes_tui.engine.state.meters import METERS_FILE
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.samples import parse_sample, parse_stall
from lanes_tui.engine.state.status import LaneStatus, corrupt_status, lane_status
from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)


@dataclass
class Watched:
    """What the engine last saw of one lane's files (sizes and mtimes)."""

    record_sig: tuple[int, int] = (0, 0)
    #: The signature of the record file last read ((0, 0): none yet); `record_sig` is set to (-1, -1)
    #: to force a re-read, this one never.
    file_sig: tuple[int, int] = (0, 0)
    samples_size: int = 0
    output_offset: int = 0
    text: Utf8Stream = field(default_factory=Utf8Stream)  # kept across reads: no character cut in two
    events_size: int = 0
    #: `meters.json` (tokens, cost, the context meter): the supervisor rewrites it, never lane.json.
    meters_sig: tuple[int, int] = (0, 0)
    state: str | None = None
    status: LaneStatus | None = None


class LaneScanner:
    """What the engine last saw of every lane, and the scan that turns what changed into events.

    `radar`: the conflict radar (`live.radar_watch`), looked at before the lanes are read; `ranks`:
    the best-of groups' ranks; `output_chunk`: the most output one read takes."""

    def __init__(self, paths: StatePaths, store: LaneStore, radar: RadarWatch, ranks: GroupRanks,
                 output_chunk: int) -> None:
        self.paths = paths
        self.store = store
        self.radar = radar
        self.ranks = ranks
        self.output_chunk = output_chunk
        self.watched: dict[str, Watched] = {}
        self._output_lanes: set[str] | None = None
        self._follow_from: dict[str, int] = {}  # newly followed lane -> its output size when followed
        #: Calls of `scan_lane`, for tests that prove an idle tick looks at no lane.
        self.lane_scans = 0

    # following output --------------------------------------------------------------------------
    @property
    def output_lanes(self) -> set[str] | None:
        """Lanes whose new output is read and streamed; None streams every lane's. The dashboard
        follows only the lane on screen, so a hundred printing lanes cost one read per tick."""
        return self._output_lanes

    @output_lanes.setter
    def output_lanes(self, lanes: set[str] | None) -> None:
        old = self._output_lanes
        for lane_id in (lanes or set()) - (old if old is not None else set(self.watched)):
            self._follow_from[lane_id] = _size(self.paths.lane(lane_id).output)
        self._output_lanes = None if lanes is None else set(lanes)

    def follow_output(self, lane_id: str | None, from_offset: int | None = None) -> bool:
        """Stream the output of this lane only (None: of no lane). Call it before loading the lane's
        tail (`output_tail_at`): the stream starts at or before the tail's end, never after.

        `from_offset`: a tail of this lane ending there is already in hand (the dashboard reads its
        neighbours' ahead of the cursor), so stream from there instead. Honoured, and True, only
        while the output since that offset is within one read (`output_chunk`) and the file did not
        shrink: otherwise the stream would skip or repeat, so it starts at the current end as usual
        and the caller loads the tail afresh.
        """
        self.output_lanes = {lane_id} if lane_id else set()
        if lane_id is None or from_offset is None or lane_id not in self._follow_from:
            return False
        size = self._follow_from[lane_id]
        if not 0 <= size - from_offset <= self.output_chunk:
            return False
        self._follow_from[lane_id] = from_offset
        return True

    def followed(self) -> Collection[str]:
        return self.watched.keys() if self._output_lanes is None else self._output_lanes

    # scanning ------------------------------------------------------------------------------------
    def scan(self, initial: bool, only: set[str] | None = None) -> list[EngineEvent]:
        """Scan every lane (`only` None) or just these; a lane whose record is gone is removed."""
        out: list[EngineEvent] = []
        moved = self.radar.refresh()  # the conflict radar, when due: lanes whose findings changed are re-read
        for lane_id in moved:
            if lane_id in self.watched:
                self.watched[lane_id].record_sig = (-1, -1)
        for lane_id, size in list(self._follow_from.items()):
            if lane_id in self.watched:
                self.watched[lane_id].output_offset = size
                self.watched[lane_id].text.reset()
            self._follow_from.pop(lane_id, None)
        if only is None:
            present = set(self.paths.lane_ids())
            candidates = sorted(present | set(self.watched))
        else:
            candidates = sorted(only | (moved & set(self.watched)))
            present = {lane_id for lane_id in candidates if self._exists(lane_id)}
        for lane_id in candidates:
            if lane_id not in present:
                if self.watched.pop(lane_id, None) is not None:
                    out.append(LaneRemoved(lane_id))
                continue
            self.scan_lane(lane_id, self.watched.setdefault(lane_id, Watched()), initial, out)
        self._rank_groups(out)
        return out

    def _exists(self, lane_id: str) -> bool:
        try:
            return self.paths.lane(lane_id).record.exists()
        except LanesError:  # not a lane id at all (a stray folder)
            return False

    def _rank_groups(self, out: list[EngineEvent]) -> None:
        """Best-of groups: a member whose rank changed gets it in the LaneChanged this scan already
        carries, or in a new one (`decisions.ranking`; nothing to do without a group)."""
        current = [w.status for w in self.watched.values() if w.status is not None]
        if not any(s.group for s in current):
            return
        for status in with_ranks(current, self.ranks.ranks(current)):
            watched = self.watched[status.id]
            if status is watched.status:
                continue
            watched.status = status
            old = next((e for e in out if isinstance(e, LaneChanged) and e.lane_id == status.id), None)
            if old is None:
                out.append(LaneChanged(status.id, status, watched.state))
            else:
                out[out.index(old)] = LaneChanged(status.id, status, old.previous_state)

    def scan_lane(self, lane_id: str, watched: Watched, initial: bool, out: list[EngineEvent]) -> None:
        self.lane_scans += 1
        lane = self.paths.lane(lane_id)
        # Output first, the record last: a subscriber sees every line before the state that ends it.
        self.scan_output(lane_id, watched, initial, out)
        size = _size(lane.samples)
        if size != watched.samples_size:
            watched.samples_size = size
            line = self.store.last_sample(lane_id)
            if line is not None:
                sample = parse_sample(line)  # typed once, here: the panes read attributes
                if sample.problems:
                    log.warning("samples.jsonl of %s: %s (dropped)", lane_id, "; ".join(sample.problems))
                if "files" in sample.active:
                    self.radar.touch(lane_id)  # the supervisor saw the worktree change
                if watched.status is not None:
                    watched.status = watched.status.with_sample(sample)
                out.append(MetersSampled(lane_id, sample))
        size = _size(lane.events)
        if size != watched.events_size:
            old, watched.events_size = watched.events_size, size
            if not initial:
                for event in _new_events(lane.events, old):
                    stalled = event.get("type") == "state" and event.get("state") == "stalled"
                    if stalled and event.get("stall"):
                        out.append(StallDetected(lane_id, parse_stall(event["stall"])))
                    if str(event.get("type", "")).startswith("lock-"):
                        watched.record_sig = (-1, -1)  # `lock` never writes lane.json: re-read the status
        meters = _sig(lane.dir / METERS_FILE)
        if meters != watched.meters_sig:  # at most every FLUSH_S while an agent reports usage
            watched.meters_sig = meters
            watched.record_sig = (-1, -1)  # re-read the status: its tokens, cost and context moved
        sig = _sig(lane.record)
        if sig != watched.record_sig:
            if watched.file_sig != (0, 0) and sig != watched.file_sig:
                # The file itself moved, so its worktree may have too. A first sight is not a move (the
                # radar's look that just ran saw the lane), nor a re-read forced for the meters, a lock or
                # the radar's own findings: a hundred lanes touched at the first scan cost the next look
                # a hundred `git status` runs.
                self.radar.touch(lane_id)
            watched.record_sig = watched.file_sig = sig
            try:
                record = self.store.read(lane_id)
            except LanesError as exc:
                if not self.store.exists(lane_id):  # removed under us: the next scan drops it
                    return
                # A corrupt record is a row with its problem and fix, not a lane that silently vanishes.
                watched.status = corrupt_status(self.store, lane_id, exc)
                previous, watched.state = watched.state, None
                out.append(LaneChanged(lane_id, watched.status, previous))
                return
            watched.status = self.radar.with_conflicts(lane_status(self.store, record))
            previous, watched.state = watched.state, record.state
            self.scan_output(lane_id, watched, initial, out)  # lines written before this record
            out.append(LaneChanged(lane_id, watched.status, previous))

    def scan_output(self, lane_id: str, watched: Watched, initial: bool, out: list[EngineEvent]) -> None:
        followed = self._output_lanes is None or lane_id in self._output_lanes
        if not followed:
            return  # nobody reads this lane's output now: it stays on disk, unread and unstatted
        path = self.paths.lane(lane_id).output
        size = _size(path)
        if initial:
            watched.output_offset = size
            watched.text.reset()
        elif size != watched.output_offset:
            start = watched.output_offset if size > watched.output_offset else 0
            skipped = max(0, size - start - self.output_chunk)
            data, end = read_output(path, start + skipped, self.output_chunk)
            if start + skipped != watched.output_offset:
                watched.text.reset()  # a jump (skipped, truncated): held bytes do not precede these
            held, watched.output_offset = watched.text.pending, end
            if text := watched.text.feed(data):  # offsets cover exactly the bytes of `text`
                out.append(OutputAppended(lane_id, start + skipped - held, text, skipped, end - watched.text.pending))

    def output_grew(self) -> set[str]:
        """Followed lanes whose output size moved since the last read: one stat each, no read."""
        grew = set()
        for lane_id in list(self.followed()):
            watched = self.watched.get(lane_id)
            if watched is not None and (lane_id in self._follow_from
                                        or _size(self.paths.lane(lane_id).output) != watched.output_offset):
                grew.add(lane_id)
        return grew


def _sig(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except FileNotFoundError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _new_events(path: Path, offset: int) -> list[dict[str, Any]]:
    if offset == 0:
        return [e for e in read_jsonl(path) if isinstance(e, dict)]
    out = []
    with open(path, "rb") as handle:
        handle.seek(offset)
        for raw in handle.read().splitlines():
            with contextlib.suppress(ValueError):
                value = json.loads(raw)
                if isinstance(value, dict):
                    out.append(value)
    return out
