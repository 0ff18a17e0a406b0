"""The guarded abandon: stop the lane, remove its worktree and `lane/` branch, keep packet and logs.

Paths and branches never come from `lane.json`, a file anyone can edit: they are derived from the
lane id and the root the lane was created under (`git.lane_paths`), the record must agree, and git
must list the folder as the lane's worktree on `lane/<id>`; any disagreement refuses before anything
is stopped or deleted. A lane created under an older `worktree_root` is abandoned from that root.

A lane whose `lane.json` is corrupt (not JSON, a wrong type, another lane's id) is abandoned only
with `--force`, and then from its id and `origin.json` alone (`lane_paths.locate_by_id`), git
confirming the folder; the corrupt file is kept aside as `lane.json.corrupt-<time>` and a minimal
valid record takes its place, so the lane is `abandoned` and nothing of it is lost.

A lane that runs on a cluster node (`record.runner != "local"`) has no worktree here: its runner
stops it and removes its worktree and branch where they are (`Runner.discard`); the mirror's packet
and logs stay, as for a local lane.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.atomic import private_opener
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import split_lane_id, validate_lane_id
from lanes_tui.engine.decisions.runners import remote_runner
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.commands import branch_exists
from lanes_tui.engine.git.lane_paths import (
    LaneLocation,
    git_witness,
    locate_by_id,
    locate_lane,
    remove_lane_worktree,
    repair_for_abandon,
)
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.lanes.launcher import stop_lane
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import CorruptRecord, LaneStore, lane_operation


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
    if record.runner != "local":
        return _plan_remote(record)
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
    """Returns what was removed; raises LanesError (nothing touched) when the plan refuses.

    `--force` first repairs what would stop it at the lane's own folder (`repair_for_abandon`): an
    unwritable folder is made writable, a damaged origin set aside. Both are kept in what it returns.
    """
    repaired: list[str] = []
    origin_aside = False
    lane = StatePaths(repo).lane(validate_lane_id(lane_id))
    if force and lane.dir.is_dir():
        repaired, origin_aside = repair_for_abandon(lane, time.strftime("%Y%m%dT%H%M%S", time.localtime()))
    with lane_operation(StatePaths(repo), lane_id, "abandon"):
        try:
            record = LaneStore(StatePaths(repo)).read(lane_id)
        except CorruptRecord as exc:
            if not force:
                raise
            return repaired + await _abandon_corrupt(repo, config, lane_id, exc)
        if origin_aside and record.runner == "local":
            # Its paths cannot come from the record either (it may have been edited to agree with the
            # damaged origin): from the lane id and git's witness alone, as for a corrupt record.
            return repaired + await _abandon_by_id(repo, config, lane_id, record)
        return repaired + await _abandon(repo, config, lane_id, force)


def _plan_remote(record: LaneRecord) -> AbandonPlan:
    """A remote lane's abandon: its runner discards it on its node; nothing local is located."""
    refusals = [f"the lane is already {record.state}"] if record.state in ("accepted", "abandoned") else []
    where = Path(f"{record.node or 'its node'}:{record.worktree}")
    return AbandonPlan(record.id, record.state, where, record.branch, 0, [], refusals, None)


async def _abandon_remote(repo: Path, config: Config, lane_id: str, force: bool) -> list[str]:
    """Discard the lane through its runner (stop, worktree and branch removed on the node), then record it."""
    store = LaneStore(StatePaths(repo))
    record = store.read(lane_id)
    plan = _plan_remote(record)
    if plan.refusals:
        raise LanesError(f"abandon {lane_id} refused: {plan.refusals[0]}")
    from lanes_tui.engine.decisions.accept_remote import discard_remote

    removed = await discard_remote(remote_runner(repo, config, record), store, lane_id)
    record = store.read(lane_id)  # the runner may have written the mirror meanwhile
    if record.result is None:
        record.result = "LANE-FAILED"
    store.transition(record, "abandoned", "abandoned by the lead", removed=removed, force=force, node=record.node)
    InboxStore(StatePaths(repo).inbox).orphan_lane(lane_id, "the lane was abandoned")
    return removed


async def _abandon(repo: Path, config: Config, lane_id: str, force: bool) -> list[str]:
    if LaneStore(StatePaths(repo)).read(lane_id).runner != "local":
        return await _abandon_remote(repo, config, lane_id, force)
    plan = plan_abandon(repo, config, lane_id, force=force)
    if plan.refusals or plan.location is None:
        raise LanesError(f"abandon {lane_id} refused: {plan.refusals[0] if plan.refusals else 'no location'}")
    stopped = await stop_lane(repo, lane_id)
    store = LaneStore(StatePaths(repo))
    removed = remove_lane_worktree(plan.location)  # asks git once more: the stop may have taken seconds
    record = store.read(lane_id)
    if record.result is None:  # lost, queued or never finished: say how it ended, not nothing
        record.result = "LANE-FAILED"
    store.transition(record, "abandoned", "abandoned by the lead", removed=removed, force=force)
    InboxStore(StatePaths(repo).inbox).orphan_lane(lane_id, "the lane was abandoned")
    return removed + [f"stopped pid {pid}" for pid in stopped]


def _witnessed(repo: Path, config: Config, lane_id: str) -> LaneLocation:
    """The lane located by its id alone, and confirmed by git before anything is stopped: a folder git
    does not list as the lane's worktree is never touched."""
    location = locate_by_id(repo, lane_id, default_root=config.lanes.worktree_root)
    try:
        git_witness(location)
    except LanesError as exc:
        raise LanesError(f"abandon {lane_id} refused: {exc.what}: refusing to delete it", exc.fix) from None
    return location


async def _abandon_corrupt(repo: Path, config: Config, lane_id: str, problem: CorruptRecord) -> list[str]:
    """`abandon --force` of a lane whose record cannot be read: nothing is taken from that record."""
    location = _witnessed(repo, config, lane_id)
    store = LaneStore(StatePaths(repo))
    kept = _set_aside(store.lane_paths(lane_id).record, store.clock.time())
    unique = worktrees.unique_commits(repo, location.branch)
    stopped = await stop_lane(repo, lane_id)  # by lane id: supervisor.json, cgroup.json, the env marker
    removed = remove_lane_worktree(location)  # asks git once more
    try:
        record = store.read(lane_id)  # the stopped supervisor may have written its own record back
    except LanesError:
        slug, attempt = split_lane_id(lane_id)
        origin = location.origin
        record = LaneRecord(id=lane_id, slug=slug, attempt=attempt, task_type="", prompt="", chain=[],
                            repo=str(location.repo), worktree=str(location.worktree), branch=location.branch,
                            base_sha="", target_branch="", created=origin.created if origin else store.clock.time(),
                            worktree_root=str(location.root))
    reason = f"abandoned by the lead; its lane.json was corrupt ({problem.what}), kept as {kept.name}"
    store.transition(record, "abandoned", reason, removed=removed, force=True, corrupt=kept.name)
    InboxStore(StatePaths(repo).inbox).orphan_lane(lane_id, "the lane was abandoned")
    lost = [f"with {unique} commit(s) on no other branch"] if unique and f"branch {location.branch}" in removed else []
    return [f"kept the corrupt record as {kept}", *removed, *lost, *(f"stopped pid {pid}" for pid in stopped)]


async def _abandon_by_id(repo: Path, config: Config, lane_id: str, record: LaneRecord) -> list[str]:
    """`abandon --force` of a lane whose origin was damaged: located by its id and git alone."""
    location = _witnessed(repo, config, lane_id)
    store = LaneStore(StatePaths(repo))
    unique = worktrees.unique_commits(repo, location.branch)
    stopped = await stop_lane(repo, lane_id)
    removed = remove_lane_worktree(location)  # asks git once more
    record = store.read(lane_id)  # the stopped supervisor may have written its record meanwhile
    if record.result is None:
        record.result = "LANE-FAILED"
    store.transition(record, "abandoned", "abandoned by the lead; its origin.json was damaged and set aside",
                     removed=removed, force=True)
    InboxStore(StatePaths(repo).inbox).orphan_lane(lane_id, "the lane was abandoned")
    lost = [f"with {unique} commit(s) on no other branch"] if unique and f"branch {location.branch}" in removed else []
    return [*removed, *lost, *(f"stopped pid {pid}" for pid in stopped)]


def _set_aside(record: Path, now: float) -> Path:
    """A copy of the corrupt `lane.json` next to it (`lane.json.corrupt-<time>`, never over an earlier one)."""
    data = record.read_bytes()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now))
    for n in range(1000):
        aside = record.with_name(f"{record.name}.corrupt-{stamp}" + (f"-{n}" if n else ""))
        try:
            with open(aside, "xb", opener=private_opener) as out:
                out.write(data)
                os.fsync(out.fileno())
        except FileExistsError:
            continue
        return aside
    raise LanesError(f"cannot keep {record} aside: too many earlier copies",
                     f"move the old copies out of {record.parent}")
