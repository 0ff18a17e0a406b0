"""The guarded abandon: stop the lane, remove its worktree and `lane/` branch, keep packet and logs.

Paths and branches never come from `lane.json`, a file anyone can edit: they are derived from the
lane id and the root the lane was created under (`git.lane_paths`), the record must agree, and git
must list the folder as the lane's worktree on `lane/<id>`; any disagreement refuses before anything
is stopped or deleted. A lane created under an older `worktree_root` is abandoned from that root.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.commands import branch_exists
from lanes_tui.engine.git.lane_paths import LaneLocation, git_witness, locate_lane, remove_lane_worktree
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.lanes.launcher import stop_lane
from lanes_tui.engine.state.paths import StatePaths
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
    #: The derived, verified worktree and branch; None when the plan refuses.
    location: LaneLocation | None = field(default=None, compare=False)

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
    location: LaneLocation | None = None
    registered = False
    try:
        location = locate_lane(repo, lane_id, record, default_root=config.lanes.worktree_root)
        worktree, branch = location.worktree, location.branch
        registered = git_witness(location) is not None
    except LanesError as exc:
        location = None
        refusals.append(f"{exc.what}: refusing to delete it" + (f" — {exc.fix}" if exc.fix else ""))
    unique = 0
    changed: list[str] = []
    if not refusals:
        if branch_exists(repo, branch):
            unique = worktrees.unique_commits(repo, branch)
        if registered and worktree.is_dir():
            changed = worktrees.changed_files(worktree, record.base_sha)
        if unique and not force:
            refusals.append(f"{unique} commit(s) on {branch} are on no other branch and would be lost; "
                            "pass --force to abandon anyway")
    return AbandonPlan(lane_id, record.state, worktree, branch, unique, changed, refusals, location)


async def abandon_lane(repo: Path, config: Config, lane_id: str, *, force: bool = False) -> list[str]:
    """Returns what was removed; raises LanesError (nothing touched) when the plan refuses."""
    with lane_operation(StatePaths(repo), lane_id, "abandon"):
        return await _abandon(repo, config, lane_id, force)


async def _abandon(repo: Path, config: Config, lane_id: str, force: bool) -> list[str]:
    plan = plan_abandon(repo, config, lane_id, force=force)
    if plan.refusals or plan.location is None:
        raise LanesError(f"abandon {lane_id} refused: {plan.refusals[0] if plan.refusals else 'no location'}")
    stopped = await stop_lane(repo, lane_id)
    store = LaneStore(StatePaths(repo))
    removed = remove_lane_worktree(plan.location)  # asks git once more: the stop may have taken seconds
    record = store.read(lane_id)
    store.transition(record, "abandoned", "abandoned by the lead", removed=removed, force=force)
    InboxStore(StatePaths(repo).inbox).orphan_lane(lane_id, "the lane was abandoned")
    return removed + [f"stopped pid {pid}" for pid in stopped]
