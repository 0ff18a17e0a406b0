"""`finish`: remove the worktrees and branches of lanes whose work is merged; list what is left.

A leftover is never removed here: a locked or dirty worktree, a branch with commits the target
does not have, or a worktree that is not where the lane's id and root put it (MISPLACED: its record
disagrees, or git has the branch in another folder), is listed with the command that resolves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import branch_for
from lanes_tui.engine.decisions.accept_plan import is_ancestor
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.commands import git_out
from lanes_tui.engine.git.lane_paths import LaneLocation, locate_lane, remove_lane_worktree
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths, worktree_path
from lanes_tui.engine.state.store import LaneStore


@dataclass(frozen=True)
class Leftover:
    lane_id: str
    kind: str  # LOCKED | DIRTY | UNMERGED | RUNNING | MISPLACED
    path: Path
    fix: str


@dataclass(frozen=True)
class FinishReport:
    removed: list[str]
    leftovers: list[Leftover]


def finish(repo: Path, config: Config) -> FinishReport:
    store = LaneStore(StatePaths(repo))
    records = {r.id: r for r in store.all()}
    removed: list[str] = []
    leftovers: list[Leftover] = []
    for entry in worktrees.list_lane_worktrees(repo):
        lane_id = entry.branch.removeprefix("lane/")
        record = records.get(lane_id)
        target = record.target_branch if record else (worktrees.current_branch(repo) or "HEAD")
        if record is not None and (record.state in LIVE_STATES or record.state == "checking"):
            leftovers.append(Leftover(lane_id, "RUNNING", entry.path, f"lanes-tui wait {lane_id}"))
            continue
        if entry.locked:
            leftovers.append(Leftover(lane_id, "LOCKED", entry.path, f"git worktree unlock {entry.path}"))
            continue
        if worktrees.is_dirty(entry.path):
            leftovers.append(Leftover(lane_id, "DIRTY", entry.path,
                                      f"lanes-tui accept {lane_id}  (or: lanes-tui abandon {lane_id})"))
            continue
        target_sha = git_out(repo, "rev-parse", target)
        if not is_ancestor(repo, entry.head, target_sha):
            leftovers.append(Leftover(lane_id, "UNMERGED", entry.path,
                                      f"lanes-tui accept {lane_id}  (or: lanes-tui abandon {lane_id} --force)"))
            continue
        try:
            location = _location(repo, config, lane_id, record)
        except LanesError as exc:
            leftovers.append(Leftover(lane_id, "MISPLACED", entry.path, str(exc)))
            continue
        if location.worktree.resolve() != entry.path.resolve():
            leftovers.append(Leftover(lane_id, "MISPLACED", entry.path,
                                      f"git has {entry.branch} in {entry.path}, not in the lane's folder "
                                      f"{location.worktree}; `git worktree move` it there, or remove it by hand"))
            continue
        try:
            removed.extend(remove_lane_worktree(location))
        except LanesError as exc:
            leftovers.append(Leftover(lane_id, "LOCKED", entry.path, str(exc)))
            continue
        if record is not None and record.state not in ("accepted", "abandoned"):
            store.transition(record, "abandoned", "finish: its work was already on the target; cleaned up")
    return FinishReport(removed, leftovers)


def _location(repo: Path, config: Config, lane_id: str, record: LaneRecord | None) -> LaneLocation:
    """Where the lane's worktree must be: from its record and origin, or (a worktree on a `lane/`
    branch with no lane record) where the configured root would put it."""
    if record is not None:
        return locate_lane(repo, lane_id, record, default_root=config.lanes.worktree_root)
    if StatePaths(repo).lane(lane_id).dir.exists():
        raise LanesError(f"lane {lane_id}'s record cannot be read", "restore its lane.json (`lanes-tui doctor`)")
    root = config.lanes.worktree_root
    return LaneLocation(lane_id, repo.resolve(), root, worktree_path(root, repo, lane_id), branch_for(lane_id), None)
