"""Lane records on disk: `lane.json` (atomic), `events.jsonl` (appended), the newest meter sample.

Every state transition goes through `LaneStore.transition`, so each one is also an event line; this
is how `status`, a restarted engine and the dashboard all agree on what happened.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lanes_tui.engine.core import slots
from lanes_tui.engine.core.atomic import append_jsonl, read_json, write_json_atomic
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import validate_lane_id
from lanes_tui.engine.state.model import STATES, LaneRecord
from lanes_tui.engine.state.paths import LanePaths, StatePaths


class LaneStore:
    def __init__(self, paths: StatePaths, clock: Clock | None = None) -> None:
        self.paths = paths
        self.clock = clock or RealClock()

    def lane_paths(self, lane_id: str) -> LanePaths:
        return self.paths.lane(lane_id)

    def exists(self, lane_id: str) -> bool:
        return self.lane_paths(lane_id).record.exists()

    def read(self, lane_id: str) -> LaneRecord:
        validate_lane_id(lane_id)
        path = self.lane_paths(lane_id).record
        try:
            data = read_json(path)
        except FileNotFoundError:
            raise LanesError(f"no lane {lane_id!r}", "see `lanes-tui status` for the lanes") from None
        except ValueError as exc:
            raise LanesError(f"lane {lane_id}: {path} is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise LanesError(f"lane {lane_id}: {path} does not hold a lane record")
        return LaneRecord.from_json(data)

    def all(self) -> list[LaneRecord]:
        """Every readable lane, oldest first; an unreadable one is skipped (reported by `doctor`)."""
        records = []
        for lane_id in self.paths.lane_ids():
            try:
                records.append(self.read(lane_id))
            except LanesError:
                continue
        return sorted(records, key=lambda r: (r.created, r.id))

    def create(self, record: LaneRecord) -> None:
        lane_dir = self.lane_paths(record.id).dir
        lane_dir.mkdir(parents=True, exist_ok=False)
        record.created = record.updated = self.clock.time()
        self.write(record)
        self.event(record.id, "state", state=record.state, reason=record.state_reason)

    def write(self, record: LaneRecord) -> None:
        record.updated = self.clock.time()
        write_json_atomic(self.lane_paths(record.id).record, record.to_json())

    def transition(self, record: LaneRecord, state: str, reason: str, **data: Any) -> LaneRecord:
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}")
        record.state = state
        record.state_reason = reason
        self.write(record)
        self.event(record.id, "state", state=state, reason=reason, **data)
        return record

    def event(self, lane_id: str, kind: str, **data: Any) -> None:
        append_jsonl(self.lane_paths(lane_id).events, {"t": self.clock.time(), "type": kind, **data})

    def last_sample(self, lane_id: str) -> dict[str, Any] | None:
        return last_json_line(self.lane_paths(lane_id).samples)


def last_json_line(path: Path, window: int = 65536) -> dict[str, Any] | None:
    """The last complete JSON object line of a file, read from its end (samples grow for hours)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - window))
            tail = handle.read()
    except FileNotFoundError:
        return None
    for raw in reversed(tail.splitlines()):
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


@contextlib.contextmanager
def lane_operation(paths: StatePaths, lane_id: str, what: str) -> Iterator[None]:
    """Hold the lane for one command (check, accept, abandon, recover) so no other command and no
    reconcile judges it half-way; the lock dies with the process, so a crash never leaves it held."""
    folder = paths.lane(lane_id).dir / "busy"
    slot = slots.try_acquire(folder, 1, {"lane": lane_id, "what": what})
    if slot is None:
        holder = next(iter(slots.holders(folder)), {})
        raise LanesError(f"lane {lane_id} is busy: {holder.get('what', 'another command')} "
                         f"(pid {holder.get('pid', '?')})", "wait for it to finish and try again")
    with slot:
        yield


def lane_busy(paths: StatePaths, lane_id: str) -> bool:
    return bool(slots.holders(paths.lane(lane_id).dir / "busy"))
