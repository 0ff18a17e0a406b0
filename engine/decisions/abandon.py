"""The guarded abandon: stop the lane, remove its worktree and `lane/` branch, keep packet and logs.

Paths and branches come from `lane.json`, a file anyone can edit, so both are checked against what
the lane id implies before anything is deleted: the branch must be exactly `lane/<id>`, the
worktree a folder named `<id>` inside the worktree root (and `remove_worktree` checks again).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import branch_for
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.commands import branch_exists
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.lanes.launcher import stop_lane
from lanes_tui.engine.state.paths import StatePaths, inside
from lanes_tui.engine.state.store import LaneStore, lane_operation


@dataclass(frozen=True)
class AbandonPlan:
    lane_id: str
    state: str
    worktree: Path
    branch: str
    unique_commits: int
    changed_files: list[str]
    refusals: list[str]

    def describe(self) -> list[str]:
        lines = [f"abandon {self.lane_id} ({self.state}): stop its processes, remove {self.worktree} "
                 f"and branch {self.branch}; packet and logs are kept"]
        if self.changed_files:
            lines.append(f"{len(self.changed_files)} changed file(s) in the worktree are discarded")
        if self.unique_commits:
            lines.append(f"{self.unique_commits} commit(s) on {self.branch} are on no other branch and would be lost")
        lines.extend(f"REFUSED: {r}" for r in self.refusals)
        return lines


def plan_abandon(repo: Path, config: Config, lane_id: str, *, force: bool = False) -> AbandonPlan:
    record = LaneStore(StatePaths(repo)).read(lane_id)
    worktree, branch = Path(record.worktree), record.branch
    refusals = []
    if record.state in ("accepted", "abandoned"):
        refusals.append(f"the lane is already {record.state}")
    if branch != branch_for(lane_id):
        refusals.append(f"lane.json names branch {branch!r}, not {branch_for(lane_id)!r}: refusing to delete it")
    root = config.lanes.worktree_root
    if worktree.name != lane_id or not inside(worktree, root) or inside(repo, worktree) or inside(worktree, repo):
        refusals.append(f"lane.json names worktree {worktree}, which is not this lane's folder under {root}: "
                        "refusing to delete it")
    unique = 0
    changed: list[str] = []
    if not refusals:
        if branch_exists(repo, branch):
            unique = worktrees.unique_commits(repo, branch)
        if worktree.is_dir():
            changed = worktrees.changed_files(worktree, record.base_sha)
        if unique and not force:
            refusals.append(f"{unique} commit(s) on {branch} are on no other branch and would be lost; "
                            "pass --force to abandon anyway")
    return AbandonPlan(lane_id, record.state, worktree, branch, unique, changed, refusals)


async def abandon_lane(repo: Path, config: Config, lane_id: str, *, force: bool = False) -> list[str]:
    """Returns what was removed; raises LanesError (nothing touched) when the plan refuses."""
    with lane_operation(StatePaths(repo), lane_id, "abandon"):
        return await _abandon(repo, config, lane_id, force)


async def _abandon(repo: Path, config: Config, lane_id: str, force: bool) -> list[str]:
    plan = plan_abandon(repo, config, lane_id, force=force)
    if plan.refusals:
        raise LanesError(f"abandon {lane_id} refused: {plan.refusals[0]}")
    stopped = await stop_lane(repo, lane_id)
    store = LaneStore(StatePaths(repo))
    removed = worktrees.remove_worktree(repo, config.lanes.worktree_root, plan.worktree, plan.branch)
    record = store.read(lane_id)
    store.transition(record, "abandoned", "abandoned by the lead", removed=removed, force=force)
    InboxStore(StatePaths(repo).inbox).orphan_lane(lane_id, "the lane was abandoned")
    return removed + [f"stopped pid {pid}" for pid in stopped]
