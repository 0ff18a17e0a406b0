"""What the command line asks of the state without running an Engine: statuses, one record, settled.

Each query reconciles first (a supervisor may have died since the last look), so `status` and `wait`
from a shell see the same truth as the dashboard.
"""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.ranking import GroupRanks, with_ranks
from lanes_tui.engine.decisions.reconcile import reconcile
from lanes_tui.engine.git.radar import RADAR_STATES, radar_report, with_conflicts
from lanes_tui.engine.lanes.launcher import supervisor_alive
from lanes_tui.engine.state.model import SETTLED_STATES, SETTLING_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import LaneStatus, corrupt_status, lane_status
from lanes_tui.engine.state.store import LaneStore

#: `wait --any`'s default: the states in which a lane waits for the lead's word.
NEEDS_LEAD_STATES = ("waiting", "ready", "rejected", "stalled", "conflict", "lost")

__all__ = ["NEEDS_LEAD_STATES", "group_members", "lane_settled", "lane_statuses", "lanes_needing_lead", "read_lane"]


def lane_statuses(repo: Path, lane_id: str | None = None) -> list[LaneStatus]:
    """Every lane's status (oldest first), or the one named; an unknown id is a LanesError.

    A lane whose record cannot be read is a row with its `problem` (and the fix), never missing
    from the list and never in the way of the others.
    """
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
    report = radar_report(repo, radar_lanes)
    statuses = [with_conflicts(lane_status(store, record), report) for record in records]
    statuses += [corrupt_status(store, bad, exc) for bad, exc in problems.items()]
    groups = {s.group for s in statuses if s.group}
    if groups:  # best-of groups are ranked over all their members, even when one lane was asked for
        pool = [lane_status(store, r) for r in store.all() if r.group in groups] if lane_id else statuses
        statuses = with_ranks(statuses, GroupRanks(repo).ranks(pool))
    return sorted(statuses, key=lambda s: (s.created, s.id))


def group_members(repo: Path, group: str) -> list[LaneStatus]:
    """The lanes of a best-of group, best first once it is ranked (else oldest first); [] for no such
    group. What the lead looks at before accepting one lane and abandoning the rest."""
    members = [s for s in lane_statuses(repo) if s.group == group]
    return sorted(members, key=lambda s: (s.rank is None, s.rank or 0, s.created, s.id))


def read_lane(repo: Path, lane_id: str, *, reconciled: bool = True) -> LaneRecord:
    """One lane's record, after a reconcile unless `reconciled` is False."""
    if reconciled:
        reconcile(repo)
    return LaneStore(StatePaths(repo)).read(lane_id)


def lane_settled(repo: Path, record: LaneRecord) -> bool:
    """True once the lane does nothing more by itself: `exited`, `stalled` and `ready` still count as
    moving while the supervisor is alive, since it is on the way to a packet (or, ready after its
    gates, to its review)."""
    if record.state not in SETTLED_STATES:
        return False
    return not (record.state in SETTLING_STATES and supervisor_alive(repo, record.id))


def lanes_needing_lead(repo: Path, states: frozenset[str] | set[str]) -> list[LaneRecord]:
    """The lanes in one of `states` now (after a reconcile), the longest in it first: what `wait --any`
    wakes on.

    A relaunched lane (superseded) no longer needs anyone; one of the settled states counts once the
    lane is settled (`lane_settled`: a `ready` lane still under review is not ready for the lead yet).
    Records that cannot be read are left out: `status` names them.
    """
    reconcile(repo)
    records, _ = LaneStore(StatePaths(repo)).scan()
    found = [r for r in records if r.state in states and not r.superseded_by
             and (r.state not in SETTLED_STATES or lane_settled(repo, r))]
    return sorted(found, key=lambda r: (r.updated, r.id))
