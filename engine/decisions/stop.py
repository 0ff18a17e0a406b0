"""`lanes-tui stop ID | --all`: stop a lane's agent, keep its worktree and its work.

The stop is the one the dashboard's `k` makes (`lanes.launcher.stop_lane`): SIGTERM to the lane's
supervisor, which stops its agent by escalation (EOF, SIGINT, SIGTERM, SIGKILL on the agent's group,
then its cgroup), writes its receipt and ends the lane `exited` / LANE-FAILED "stopped by the lead";
a supervisor that overruns its grace is killed, then whatever is left of the lane (its cgroup, any
process carrying its environment). Nothing is removed: the worktree, its changes and the `lane/`
branch stay for `recover`, `check` or `diff`; `abandon` is the command that removes them.

`stop` returns only when the lane is confirmed gone — no supervisor, no process with the lane's
environment — and says how the lane ended, after a reconcile (a supervisor killed hard never wrote
its end: the lane is then `lost`). A script may act on the worktree the moment `stop` returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.reconcile import reconcile
from lanes_tui.engine.lanes.launcher import leftover_processes, stop_lane, supervisor_alive
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

__all__ = ["StopReport", "live_lane_ids", "stop_lanes"]


@dataclass(frozen=True)
class StopReport:
    """How one stopped lane ended, and what had to be killed after its supervisor was gone."""

    lane_id: str
    state: str
    result: str | None
    reason: str
    worktree: str
    forced: tuple[int, ...] = ()

    def line(self) -> str:
        forced = f"; killed what was left: {' '.join(map(str, self.forced))}" if self.forced else ""
        return (f"stopped {self.lane_id}: {self.state} {self.result or '-'} ({self.reason}); "
                f"worktree kept: {self.worktree}{forced}")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.lane_id, "state": self.state, "result": self.result, "reason": self.reason,
                "worktree": self.worktree, "forced_pids": list(self.forced)}


def live_lane_ids(repo: Path) -> list[str]:
    """Every lane whose supervisor is alive (queued, running, waiting, checking, reviewing), oldest first."""
    store = LaneStore(StatePaths(repo))
    records, _ = store.scan()
    return [r.id for r in sorted(records, key=lambda r: (r.created, r.id)) if supervisor_alive(repo, r.id)]


async def stop_lanes(repo: Path, lane_ids: Sequence[str]) -> list[StopReport]:
    """Stop each lane (all at once) and confirm it gone; a lane that is unknown or not running is
    refused before anything is stopped (LanesError, one line with its fix)."""
    store = LaneStore(StatePaths(repo))
    for lane_id in lane_ids:
        record = store.read(lane_id)  # "no lane X" for an unknown id
        if not supervisor_alive(repo, lane_id):
            raise LanesError(f"lane {lane_id} is not running ({record.state}: {record.state_reason})",
                             f"nothing to stop; `lanes-tui status {lane_id}` shows it")
    return list(await asyncio.gather(*(_stop_one(repo, store, lane_id) for lane_id in lane_ids)))


async def _stop_one(repo: Path, store: LaneStore, lane_id: str) -> StopReport:
    forced = await stop_lane(repo, lane_id)
    left = await asyncio.to_thread(leftover_processes, repo, lane_id)
    if supervisor_alive(repo, lane_id) or left:
        pids = " ".join(str(k.pid) for k in left) or "its supervisor"
        raise LanesError(f"lane {lane_id} did not stop: {pids} still running",
                         f"try `lanes-tui stop {lane_id}` again; `lanes-tui recover {lane_id}` names what is left")
    await asyncio.to_thread(reconcile, repo)  # a supervisor killed hard left its record: lost
    record = store.read(lane_id)
    return StopReport(record.id, record.state, record.result, record.state_reason, record.worktree, tuple(forced))
