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
from lanes_tui.engine.core.atomic import PRIVATE_DIR, append_jsonl, read_json
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import validate_lane_id
from lanes_tui.engine.core.schema import NewerSchema, check_schema, stamped
from lanes_tui.engine.state.model import STATES, LaneRecord
from lanes_tui.engine.state.paths import LanePaths, StatePaths
from lanes_tui.engine.state.seals import write_sealed


class CorruptRecord(LanesError):
    """`lane.json` is there but cannot be trusted at all: not JSON, a wrong type, or another lane's id."""


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
            raise CorruptRecord(f"lane {lane_id}: lane.json is not valid JSON ({exc})", corrupt_fix(lane_id)) from None
        except OSError as exc:
            raise LanesError(f"lane {lane_id}: cannot read {path}: {exc.strerror}",
                             "make the state folder readable again: chmod -R u+rwX .lanes/state") from None
        try:
            check_schema(data, "lane.json", f"lane.json of {lane_id}")  # newer: refused as it is, never "corrupt"
            record = LaneRecord.from_json(data)
        except NewerSchema:
            raise
        except LanesError as exc:
            raise CorruptRecord(f"lane {lane_id}: lane.json is corrupt: {exc.what}", corrupt_fix(lane_id)) from None
        if record.id != lane_id:
            # A record never speaks for another lane: written back, it would clobber that lane's record.
            raise CorruptRecord(f"lane {lane_id}: lane.json names lane {record.id!r}, not its own folder's name",
                                corrupt_fix(lane_id))
        return record

    def all(self) -> list[LaneRecord]:
        """Every readable lane, oldest first; an unreadable one is skipped (see `scan` to show it)."""
        return self.scan()[0]

    def scan(self) -> tuple[list[LaneRecord], dict[str, LanesError]]:
        """Every readable lane (oldest first) and, by lane id, why each unreadable one could not be read.

        One corrupt `lane.json` must neither hide itself nor break the others: `status`, the
        dashboard and reconcile go on with the readable lanes and show the rest as problems.
        """
        records: list[LaneRecord] = []
        problems: dict[str, LanesError] = {}
        for lane_id in self.paths.lane_ids():
            try:
                records.append(self.read(lane_id))
            except LanesError as exc:
                problems[lane_id] = exc
        return sorted(records, key=lambda r: (r.created, r.id)), problems

    def taken(self, lane_id: str) -> bool:
        """Does lane `lane_id` exist, or does its folder hold anything but a lock left behind?

        An empty folder, or one with only an unheld `busy/` lock (left by an older lanes-tui or a
        crash at the wrong moment), must not make the id unusable for ever.
        """
        return self.exists(lane_id) or not _only_leftovers(self.lane_paths(lane_id).dir)

    def create(self, record: LaneRecord) -> None:
        lane_dir = self.lane_paths(record.id).dir
        if not self.exists(record.id) and lane_dir.exists() and _only_leftovers(lane_dir):
            import shutil  # rarely needed, 0.7 MB with bz2 and lzma: kept out of a plain lane's supervisor

            shutil.rmtree(lane_dir, ignore_errors=True)  # nothing of a lane in it: see `taken`
        lane_dir.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=False)  # 0700: the lane's files are the lead's
        record.created = record.updated = self.clock.time()
        self.write(record)
        self.event(record.id, "state", state=record.state, reason=record.state_reason)

    def write(self, record: LaneRecord) -> None:
        """The one writer of lane.json: atomically, then its seal (`state.seals`), so the decisive
        steps can tell a record lanes-tui wrote from one changed behind its back."""
        record.updated = self.clock.time()
        write_sealed(self.lane_paths(record.id).record, stamped(record.to_json(), "lane.json"))

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
        except (ValueError, RecursionError):  # a torn line, or `[[[[…` past the decoder's stack
            continue
        if isinstance(value, dict):
            return value
    return None


@contextlib.contextmanager
def lane_operation(paths: StatePaths, lane_id: str, what: str) -> Iterator[None]:
    """Hold the lane for one command (run, check, accept, abandon, recover) so no other command and no
    reconcile judges it half-way; the lock dies with the process, so a crash never leaves it held.

    Only a lane that exists is locked: locking `ghost-a1` used to create its folder, and `run --id
    ghost` then said "already exists" for good. The lock file and its `busy/` folder are removed on
    every way out (a `kill -9` leaves an unheld file, which the next operation reuses and removes).
    """
    lane = paths.lane(lane_id)
    if not lane.record.exists():
        raise LanesError(f"no lane {lane_id!r}", "see `lanes-tui status` for the lanes")
    folder = lane.dir / "busy"
    slot = _take_lane_lock(folder, {"lane": lane_id, "what": what})
    if slot is None:
        holder = next(iter(slots.holders(folder)), {})
        raise LanesError(f"lane {lane_id} is busy: {holder.get('what', 'another command')} "
                         f"(pid {holder.get('pid', '?')})", "wait for it to finish and try again")
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            slot.path.unlink()  # still held: whoever opened the old file sees it unlinked and retries
        slot.release()
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty: another holder's file keeps it


def _take_lane_lock(folder: Path, holder: dict[str, Any]) -> slots.Slot | None:
    """The lane's one slot, or None when another process holds it.

    Because the holder removes the lock file on its way out, a lock taken on a file that has since
    been unlinked (or replaced) is no lock: check that the path still names the locked file.
    """
    for _ in range(20):
        try:
            slot = slots.try_acquire(folder, 1, holder)
        except FileNotFoundError:  # the folder was removed between its mkdir and the open: again
            continue
        if slot is None:
            return None
        try:
            same = os.stat(slot.path).st_ino == os.fstat(slot.fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return slot
        slot.release()
    raise LanesError(f"cannot take the lock in {folder}", "another command keeps replacing it; try again")


def _only_leftovers(lane_dir: Path) -> bool:
    """True for a missing or empty lane folder, or one holding only an unheld `busy/` lock."""
    try:
        entries = list(lane_dir.iterdir())
    except FileNotFoundError:
        return True
    except OSError:
        return False
    for entry in entries:
        if entry.name != "busy" or not entry.is_dir() or slots.holders(entry):
            return False
        if any(not p.name.startswith("slot-") for p in entry.iterdir()):
            return False
    return True


def lane_busy(paths: StatePaths, lane_id: str) -> bool:
    return bool(slots.holders(paths.lane(lane_id).dir / "busy"))


def corrupt_fix(lane_id: str) -> str:
    """What the lead can do about a lane whose `lane.json` cannot be trusted (one place to say it).

    Nothing may take a path or a name from such a record, so `abandon --force` works from the lane
    id and `origin.json` alone, with git as the witness, and keeps the corrupt file aside.
    """
    return (f"restore .lanes/state/lanes/{lane_id}/lane.json from a backup, or `lanes-tui abandon {lane_id} "
            f"--force` (stops the lane and removes its worktree and lane/{lane_id}, found from its id and "
            "origin.json with git's confirmation; the corrupt file is kept aside)")
