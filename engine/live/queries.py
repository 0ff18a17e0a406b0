"""What the command line asks of the state without running an Engine: statuses, one record, settled.

Each query reconciles first (a supervisor may have died since the last look), so `status` and `wait`
from a shell see the same truth as the dashboard. With `[runner] kind = "ray"` each query first
refreshes the local mirror of the cluster's lanes (`sync_remote`, at most once a second in a
process): a Ray lane's record only changes on the lead's disk when someone syncs it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from pathlib import Path

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.ranking import GroupRanks, with_ranks
from lanes_tui.engine.decisions.reconcile import reconcile
from lanes_tui.engine.decisions.runners import shared_runner
from lanes_tui.engine.git.head_repair import repair_from_status
from lanes_tui.engine.git.lane_paths import lane_problem
from lanes_tui.engine.git.radar import RADAR_STATES, radar_report, with_conflicts
from lanes_tui.engine.lanes.launcher import supervisor_alive
from lanes_tui.engine.lanes.runner import as_remote
from lanes_tui.engine.state.model import FINAL_STATES, SETTLED_STATES, SETTLING_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import LaneStatus, corrupt_status, lane_status
from lanes_tui.engine.state.store import LaneStore

#: `wait --any`'s default: the states in which a lane waits for the lead's word.
NEEDS_LEAD_STATES = ("waiting", "ready", "rejected", "stalled", "conflict", "lost")

__all__ = ["NEEDS_LEAD_STATES", "group_members", "lane_settled", "lane_statuses", "lanes_needing_lead", "read_lane",
           "sync_remote"]

log = logging.getLogger(__name__)

#: Seconds between two syncs of the remote lanes' mirror by one process (`wait` polls every 0.1 s).
SYNC_EVERY_S = 1.0
_last_sync: dict[str, float] = {}


def sync_remote(repo: Path, *, every_s: float = SYNC_EVERY_S) -> list[str]:
    """Refresh the mirror of a Ray config's lanes; the ids whose state changed ([] for a local config).

    Called by every query, so `status` and `wait` show fresh states; not more than once per `every_s`
    in a process. A config that cannot be read, or a cluster that cannot be reached, leaves the mirror
    as it was (logged): `status` then shows the last known states, never a traceback. Inside a running
    event loop (the dashboard) nothing is done: the engine's own tick syncs.
    """
    try:
        config = load_config(repo)
    except LanesError:
        return []
    if config.runner.kind == "local":
        return []
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return []
    key = str(repo)
    now = time.monotonic()
    if now - _last_sync.get(key, -every_s) < every_s:
        return []
    _last_sync[key] = now
    try:
        remote = as_remote(shared_runner(repo, config))
        return asyncio.run(remote.sync()) if remote is not None else []
    except Exception as exc:  # a cluster that cannot be reached: the last known states, not a traceback
        log.info("the remote lanes were not synced: %s", exc)
        return []


def lane_statuses(repo: Path, lane_id: str | None = None) -> list[LaneStatus]:
    """Every lane's status (oldest first), or the one named; an unknown id is a LanesError.

    A lane whose record cannot be read is a row with its `problem` (and the fix), never missing
    from the list and never in the way of the others.
    """
    sync_remote(repo)
    reconcile(repo)
    store = LaneStore(StatePaths(repo))
    problems: dict[str, LanesError] = {}
    if lane_id:
        try:
            records = [store.read(lane_id)]
        except LanesError as exc:
            if not store.exists(lane_id):
                raise
            records, problems = [], {lane_id: exc}
    else:
        records, problems = store.scan()
    # The conflict radar (live and ready lanes) looks at all of them, even when one lane was asked for.
    radar_lanes = [] if not any(r.state in RADAR_STATES for r in records) else store.all() if lane_id else records
    for record in records:  # a HEAD an agent left on a private commit breaks the lead's gc: set back first
        repair_from_status(repo, store, record)
    report = radar_report(repo, radar_lanes)
    statuses = [_with_problem(store, with_conflicts(lane_status(store, record), report), record)
                for record in records]
    statuses += [corrupt_status(store, bad, exc) for bad, exc in problems.items()]
    groups = {s.group for s in statuses if s.group}
    if groups:  # best-of groups are ranked over all their members, even when one lane was asked for
        pool = [lane_status(store, r) for r in store.all() if r.group in groups] if lane_id else statuses
        statuses = with_ranks(statuses, GroupRanks(repo).ranks(pool))
    return sorted(statuses, key=lambda s: (s.created, s.id))


def _with_problem(store: LaneStore, status: LaneStatus, record: LaneRecord) -> LaneStatus:
    """The status with its lane's folder or origin problem (`git.lane_paths.lane_problem`) as its why,
    its state kept: one lane's unwritable folder or torn origin is that lane's row, never the others'."""
    if status.problem is not None or record.runner != "local" or record.state in FINAL_STATES:
        return status
    problem = lane_problem(store.lane_paths(record.id))
    return status if problem is None else dataclasses.replace(status, problem=problem)


def group_members(repo: Path, group: str) -> list[LaneStatus]:
    """The lanes of a best-of group, best first once it is ranked (else oldest first); [] for no such
    group. What the lead looks at before accepting one lane and abandoning the rest."""
    members = [s for s in lane_statuses(repo) if s.group == group]
    return sorted(members, key=lambda s: (s.rank is None, s.rank or 0, s.created, s.id))


def read_lane(repo: Path, lane_id: str, *, reconciled: bool = True) -> LaneRecord:
    """One lane's record, after a reconcile unless `reconciled` is False."""
    if reconciled:
        sync_remote(repo)
        reconcile(repo)
    return LaneStore(StatePaths(repo)).read(lane_id)


def lane_settled(repo: Path, record: LaneRecord) -> bool:
    """True once the lane does nothing more by itself: `exited`, `stalled` and `ready` still count as
    moving while the supervisor is alive, since it is on the way to a packet (or, ready after its
    gates, to its review)."""
    if record.state not in SETTLED_STATES:
        return False
    if record.state not in SETTLING_STATES:
        return True
    if record.runner != "local":  # its supervisor is on a node: its actor still held means still moving
        return not _held_remotely(repo, record.id)
    return not supervisor_alive(repo, record.id)


def _held_remotely(repo: Path, lane_id: str) -> bool:
    """A cluster lane whose actor the runner still polls (placed and `live` in the mirror's `ray.json`):
    its supervisor on the node may still be on its way to a packet. The mirror module needs no Ray."""
    from lanes_tui.engine.remote.mirror import LaneMirror

    info = LaneMirror(repo).runner_info(lane_id)
    return info.get("actor", "live") == "live" and bool(info.get("node_id"))


def lanes_needing_lead(repo: Path, states: frozenset[str] | set[str]) -> list[LaneRecord]:
    """The lanes in one of `states` now (after a reconcile), the longest in it first: what `wait --any`
    wakes on.

    A relaunched lane (superseded) no longer needs anyone; one of the settled states counts once the
    lane is settled (`lane_settled`: a `ready` lane still under review is not ready for the lead yet).
    Records that cannot be read are left out: `status` names them.
    """
    sync_remote(repo)
    reconcile(repo)
    records, _ = LaneStore(StatePaths(repo)).scan()
    found = [r for r in records if r.state in states and not r.superseded_by
             and (r.state not in SETTLED_STATES or lane_settled(repo, r))]
    return sorted(found, key=lambda r: (r.updated, r.id))
