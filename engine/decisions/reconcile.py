"""Rebuild lane states from disk: receipts, supervisor pids and their start times.

Run on every engine start and by `status`: a lane whose supervisor is gone is either finished (its
receipt says how) or `lost`. A pid alone proves nothing, since pids are recycled; the supervisor's
recorded create time must match too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.core.atomic import read_json
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.decisions.accept import recover_interrupted_accepts
from lanes_tui.engine.lanes.launcher import supervisor_alive
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore, lane_busy

log = logging.getLogger(__name__)

#: States a supervisor owns: it must be alive for the lane to be in one of them.
SUPERVISED_STATES = LIVE_STATES | {"checking"}


@dataclass(frozen=True)
class Reconciled:
    lane_id: str
    before: str
    after: str
    reason: str


def reconcile(repo: Path, clock: Clock | None = None) -> list[Reconciled]:
    paths = StatePaths(repo)
    for line in recover_interrupted_accepts(repo):
        log.warning("interrupted accept: %s", line)
    store = LaneStore(paths, clock)
    changes: list[Reconciled] = []
    for record in store.all():
        change = reconcile_lane(repo, store, record)
        if change is not None:
            changes.append(change)
    return changes


def reconcile_lane(repo: Path, store: LaneStore, record: LaneRecord) -> Reconciled | None:
    if record.state not in SUPERVISED_STATES or supervisor_alive(repo, record.id):
        return None
    if lane_busy(store.paths, record.id):  # a check or an accept runs the gates outside the supervisor
        return None
    # The supervisor may still be writing its last lines: re-read before judging.
    record = store.read(record.id)
    if record.state not in SUPERVISED_STATES or supervisor_alive(repo, record.id):
        return None
    before = record.state
    lane = store.lane_paths(record.id)
    try:
        receipt = read_json(lane.receipt)
    except (FileNotFoundError, ValueError):
        receipt = None
    if isinstance(receipt, dict) and receipt.get("result"):
        result = str(receipt["result"])
        record.result = result
        after = "stalled" if result == "LANE-STALLED" else "exited"
        reason = f"reconciled from the receipt: {receipt.get('reason', result)}"
    else:
        after = "lost"
        reason = "its supervisor is gone and left no receipt"
    store.transition(record, after, reason)
    _orphan_questions(store.paths, record.id, reason)
    log.info("reconciled %s: %s -> %s (%s)", record.id, before, after, reason)
    return Reconciled(record.id, before, after, reason)


def _orphan_questions(paths: StatePaths, lane_id: str, reason: str) -> None:
    from lanes_tui.engine.inbox.store import InboxStore

    InboxStore(paths.inbox).orphan_lane(lane_id, reason)
