"""`finish`: remove the worktrees and branches of lanes whose work is merged; list what is left.

A leftover is never removed here: a locked or dirty worktree, a branch with work the target does
not have, or a worktree that is not where the lane's id and root put it (MISPLACED: its record
disagrees, or git has the branch in another folder), is listed with the command that resolves it.

Merged means one of two things, both asked of git (`merged_how`):
- the branch's head is an ancestor of the target (a fast-forward accept, a merge commit), or
- tree equality (a squash merge, a cherry-pick, the lead's own rebase): for every file the branch
  changed since its merge base with the target, the target holds exactly the branch's version
  (`git diff --quiet TARGET BRANCH -- FILES`). Deleting such a branch loses no content. A target that
  edited those files again afterwards is not recognised: the branch stays a leftover (the safe side).

`lane/` branches with no worktree (abandoned folders, accepts cleaned by hand) are judged the same way;
a branch checked out anywhere is never deleted, and only derived `lane/<id>` names are touched.

Each lane cleaned up is a `Removal` that says why it could go (accepted, changed nothing, merged, merged
by squash or cherry-pick): a lane that turns `abandoned` without a reason reads as lost work. The push
comes after, and only when nothing is left over (`FinishReport.push_held`): a leftover is work the lead has not
decided on yet, and pushing the programme branch past it is the lead's explicit call (`--push-anyway`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import branch_for, validate_lane_branch
from lanes_tui.engine.decisions.accept_plan import is_ancestor
from lanes_tui.engine.decisions.packet import read_packet
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.commands import git_out, list_worktrees, nul_list, run_git
from lanes_tui.engine.git.lane_paths import LaneLocation, locate_lane, remove_lane_worktree
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths, worktree_path
from lanes_tui.engine.state.seals import check_fix, seal_problem
from lanes_tui.engine.state.store import LaneStore


@dataclass(frozen=True)
class Leftover:
    lane_id: str
    kind: str  # LOCKED | DIRTY | UNMERGED | RUNNING | MISPLACED | CHANGED (lane.json not as lanes-tui wrote it)
    path: Path | None  # None: a `lane/` branch with no worktree
    fix: str
    branch: str = ""


@dataclass(frozen=True)
class Removal:
    """One lane finish cleaned up: `removed` (already decided, or no record) or `abandoned` (finish
    decided it), why that was safe, and what went (`worktree PATH`, `branch lane/ID`)."""

    lane_id: str
    action: str
    reason: str
    items: tuple[str, ...]

    def line(self) -> str:
        return f"{self.action} {self.lane_id}: {self.reason}"

    def to_json(self) -> dict[str, object]:
        return {"id": self.lane_id, "action": self.action, "reason": self.reason, "line": self.line(),
                "removed": list(self.items)}


@dataclass(frozen=True)
class FinishReport:
    removed: list[str]
    leftovers: list[Leftover]
    #: The `lane/` branches deleted (with a worktree or without), each once.
    deleted: list[str] = field(default_factory=list)
    #: Every lane cleaned up, with why (the items of `removed`, grouped by lane).
    lanes: list[Removal] = field(default_factory=list)

    def push_held(self, *, push_anyway: bool) -> str | None:
        """Why finish does not push now, or None. Leftovers hold the push unless the lead says otherwise."""
        count = len(self.leftovers)
        if not count or push_anyway:
            return None
        return (f"{count} leftover{'' if count == 1 else 's'} remain{'s' if count == 1 else ''} (listed above); "
                "push anyway with `--push-anyway`")


def finish(repo: Path, config: Config) -> FinishReport:
    store = LaneStore(StatePaths(repo))
    records = {r.id: r for r in store.all()}
    removed: list[str] = []
    leftovers: list[Leftover] = []
    lanes: list[Removal] = []
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
        how = merged_how(repo, entry.head, target_sha)
        if how is None:
            leftovers.append(Leftover(lane_id, "UNMERGED", entry.path,
                                      f"lanes-tui accept {lane_id}  (or: lanes-tui abandon {lane_id} --force)",
                                      entry.branch))
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
        if record is not None and (changed := _changed_record(store, lane_id)):  # before anything is removed
            leftovers.append(Leftover(lane_id, "CHANGED", entry.path, changed, entry.branch))
            continue
        why = _why(store, record, entry.head, target, how)  # before the worktree and branch go
        try:
            items = remove_lane_worktree(location)
        except LanesError as exc:
            leftovers.append(Leftover(lane_id, "LOCKED", entry.path, str(exc)))
            continue
        removed.extend(items)
        lanes.append(_decided(store, lane_id, record, why, items))
    with_worktree = {e.branch for e in worktrees.list_lane_worktrees(repo)} | {left.branch for left in leftovers}
    _branches_alone(repo, store, records, with_worktree, removed, leftovers, lanes)
    deleted = [item.removeprefix("branch ") for item in removed if item.startswith("branch ")]
    return FinishReport(removed, leftovers, list(dict.fromkeys(deleted)), lanes)


def _why(store: LaneStore, record: LaneRecord | None, head: str, target: str, how: str) -> str:
    """Why a lane's worktree and branch may go, as the lead reads it in finish's output."""
    if record is not None and record.state == "accepted":
        sha = str((read_packet(store.lane_paths(record.id)) or {}).get("accepted_sha") or "")
        return f"accepted, merged into {target}" + (f" at {sha[:10]}" if sha else "")
    before = "abandoned earlier; " if record is not None and record.state == "abandoned" else \
        "" if record is not None else "no lane record; "
    if record is not None and head == record.base_sha:
        return before + "it changed nothing (its branch has no commit of its own)"
    return before + (f"its branch is merged (squash or cherry-pick) into {target}" if how == "same-tree"
                     else f"its branch is merged into {target}")


def _decided(store: LaneStore, lane_id: str, record: LaneRecord | None, why: str, items: list[str]) -> Removal:
    """The lane's record after its cleanup: an undecided lane becomes `abandoned`, with the reason."""
    if record is None or record.state in ("accepted", "abandoned"):
        return Removal(lane_id, "removed", why, tuple(items))
    store.transition(record, "abandoned", f"finish: {why}; cleaned up")
    return Removal(lane_id, "abandoned", why, tuple(items))


def merged_how(repo: Path, head: str, target_sha: str) -> str | None:
    """"merged" (an ancestor of the target), "same-tree" (squashed or cherry-picked: see the module's
    docstring), or None: the branch holds work the target does not have."""
    if is_ancestor(repo, head, target_sha):
        return "merged"
    base = run_git(repo, "merge-base", head, target_sha, check=False)
    if base.returncode != 0:
        return None  # unrelated histories: nothing to compare against
    base_sha = base.stdout.decode().strip()
    files = nul_list(run_git(repo, "diff", "--name-only", "-z", "--no-renames", base_sha, head, "--").stdout)
    if not files:
        return "same-tree"
    same = run_git(repo, "diff", "--quiet", "--no-renames", target_sha, head, "--", *files, check=False)
    return "same-tree" if same.returncode == 0 else None


def _lane_branches(repo: Path) -> dict[str, str]:
    """Every local `lane/<id>` branch with a valid id, and its head."""
    out = git_out(repo, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads/lane/")
    heads: dict[str, str] = {}
    for line in out.splitlines():
        name, _, sha = line.partition(" ")
        try:
            heads[validate_lane_branch(name)] = sha
        except LanesError:
            continue
    return heads


def _branches_alone(repo: Path, store: LaneStore, records: dict[str, LaneRecord], skip: set[str],
                    removed: list[str], leftovers: list[Leftover], lanes: list[Removal]) -> None:
    """The `lane/` branches no worktree holds: deleted when merged, listed as UNMERGED otherwise."""
    for branch, head in sorted(_lane_branches(repo).items()):
        lane_id = branch.removeprefix("lane/")
        if branch in skip or branch_for(lane_id) != branch:
            continue
        record = records.get(lane_id)
        if record is not None and (record.state in LIVE_STATES or record.state == "checking"):
            leftovers.append(Leftover(lane_id, "RUNNING", None, f"lanes-tui wait {lane_id}", branch))
            continue
        target = record.target_branch if record else (worktrees.current_branch(repo) or "HEAD")
        proc = run_git(repo, "rev-parse", "--verify", "--quiet", f"{target}^{{commit}}", check=False)
        target_sha = proc.stdout.decode().strip()
        how = merged_how(repo, head, target_sha) if proc.returncode == 0 else None
        if how is None:
            fix = (f"lanes-tui accept {lane_id}  (or: lanes-tui abandon {lane_id} --force)" if record is not None
                   else f"merge it, or delete it: git branch -D {branch}")
            leftovers.append(Leftover(lane_id, "UNMERGED", None, fix, branch))
            continue
        if record is not None and (changed := _changed_record(store, lane_id)):  # its target said "merged"
            leftovers.append(Leftover(lane_id, "CHANGED", None, changed, branch))
            continue
        holder = next((e.path for e in list_worktrees(repo) if e.branch == branch), None)
        if holder is not None:  # checked out since the listing above: never deleted from under anyone
            leftovers.append(Leftover(lane_id, "LOCKED", holder, f"{branch} is checked out in {holder}", branch))
            continue
        # `branch -D` refuses a branch checked out anywhere; the head is checked again right before.
        if git_out(repo, "rev-parse", f"refs/heads/{branch}") != head:
            leftovers.append(Leftover(lane_id, "UNMERGED", None, f"{branch} moved while finish ran; run it again",
                                      branch))
            continue
        why = _why(store, record, head, target, how)
        run_git(repo, "branch", "-D", branch, fix=f"check `git branch --list {branch}`, then run finish again")
        removed.append(f"branch {branch}")
        lanes.append(_decided(store, lane_id, record, why, [f"branch {branch}"]))


def _changed_record(store: LaneStore, lane_id: str) -> str:
    """'' when lane.json is the one lanes-tui last wrote; else the problem and its fix. finish takes
    the target and the state from the record, so a retargeted record could make unmerged work look
    merged and have its branch deleted."""
    problem = seal_problem(store.lane_paths(lane_id).record)
    if problem is None:
        return ""
    if store.read(lane_id).state in ("accepted", "abandoned"):  # `check` refuses a decided lane
        return f"{problem}; restore it, or remove the worktree and lane/{lane_id} by hand after a look"
    return f"{problem}; {check_fix(lane_id)}"


def _location(repo: Path, config: Config, lane_id: str, record: LaneRecord | None) -> LaneLocation:
    """Where the lane's worktree must be: from its record and origin, or (a worktree on a `lane/`
    branch with no lane record) where the configured root would put it."""
    if record is not None:
        return locate_lane(repo, lane_id, record, default_root=config.lanes.worktree_root)
    if StatePaths(repo).lane(lane_id).dir.exists():
        raise LanesError(f"lane {lane_id}'s record cannot be read", "restore its lane.json (`lanes-tui doctor`)")
    root = config.lanes.worktree_root
    return LaneLocation(lane_id, repo.resolve(), root, worktree_path(root, repo, lane_id), branch_for(lane_id), None)
