"""What an accept would do, and every reason it must refuse, before anything is touched.

The dashboard's confirm modal shows this plan (gates, review, files, target, commits); the accept
itself re-derives it under the accept lock so nothing can change between the check and the merge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.accept_journal import read_journal
from lanes_tui.engine.decisions.packet import read_packet
from lanes_tui.engine.decisions.scope import describe_outside, outside_scope
from lanes_tui.engine.git import lead_checkout, worktrees
from lanes_tui.engine.git.commands import git_out, list_worktrees, nul_list, run_git
from lanes_tui.engine.git.lane_paths import LaneLocation, locate_lane, working_tree
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import LanePaths, StatePaths
from lanes_tui.engine.state.store import LaneStore

#: States from which an accept may go ahead with `--override REASON`.
OVERRIDABLE = frozenset({"rejected", "exited", "stalled", "lost", "conflict"})


@dataclass
class AcceptPlan:
    """Everything the lead needs to confirm an accept, and the refusals that block it."""

    lane_id: str
    state: str
    target: str
    target_sha: str
    base_sha: str
    worktree: Path
    branch: str
    files: list[str]
    gates_status: str
    gates: list[dict[str, Any]]
    review: str
    needs_rebase: bool
    target_checkout: Path | None
    override: str | None = None
    refusals: list[str] = field(default_factory=list)
    #: Not refusals: the lead checkout changed since the lane started (the lead's own edits do that too).
    warnings: list[str] = field(default_factory=list)
    #: The lane's scope (its plan ticket's files and folders; empty: no scope, nothing checked).
    scope: list[str] = field(default_factory=list)
    #: The changed files outside `scope`: a refusal unless the lead gives `--override REASON`.
    outside_scope: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.refusals

    def raise_if_refused(self) -> None:
        if self.refusals:
            raise LanesError(f"accept {self.lane_id} refused: {self.refusals[0]}")

    def describe(self, *, scope: bool = True) -> list[str]:
        """Lines for the confirm modal and `accept --dry-run`; `scope=False` leaves out the scope
        lines (the accept modal shows the scope and the files outside it in a block of its own)."""
        lines = [
            f"lane {self.lane_id} ({self.state}) → {self.target} at {self.target_sha[:10]}",
            f"gates: {self.gates_status}; review: {self.review}",
            f"files ({len(self.files)}): " + (", ".join(self.files[:12]) + (" …" if len(self.files) > 12 else "")
                                             if self.files else "none"),
            ("the target moved since the lane started: the lane is rebased and its gates run again"
             if self.needs_rebase else "fast-forward of the target"),
            "then the worktree and branch " + self.branch + " are removed",
        ]
        if scope and self.scope:
            lines.append("scope: " + ", ".join(self.scope))
            lines.append(f"outside its scope ({len(self.outside_scope)}): " + (", ".join(self.outside_scope[:12])
                         + (" …" if len(self.outside_scope) > 12 else "") if self.outside_scope else "none"))
        if self.override:
            lines.append(f"override: {self.override}")
        lines.extend(f"WARNING: {w}" for w in self.warnings)
        lines.extend(f"REFUSED: {r}" for r in self.refusals)
        return lines


def plan_accept(repo: Path, config: Config, lane_id: str, *, override: str | None = None) -> AcceptPlan:
    store = LaneStore(StatePaths(repo))
    record = store.read(lane_id)
    packet = read_packet(store.lane_paths(lane_id)) or {}
    worktree = Path(record.worktree)  # shown only: every step uses the derived, verified location below
    target = record.target_branch
    refusals: list[str] = []
    target_sha = ""
    try:
        target_sha = git_out(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{target}^{{commit}}")
    except LanesError:
        refusals.append(f"the target branch {target!r} does not exist any more")
    plan = AcceptPlan(
        lane_id=lane_id, state=record.state, target=target, target_sha=target_sha, base_sha=record.base_sha,
        worktree=worktree, branch=record.branch, files=list(packet.get("changed_files", [])),
        gates_status=str(packet.get("gates_status", "none")), gates=list(packet.get("gates", [])),
        review=str(packet.get("review", "MISSING")), needs_rebase=False, target_checkout=None,
        override=override, refusals=refusals, scope=list(record.scope),
    )
    plan.outside_scope = outside_scope(plan.files, plan.scope)  # the packet's files, until the worktree's below
    _check_state(plan, record, packet, override)
    _check_journal(plan, store.lane_paths(lane_id))
    location: LaneLocation | None = None
    try:
        location = locate_lane(repo, lane_id, record, default_root=config.lanes.worktree_root)
        plan.worktree, plan.branch = location.worktree, location.branch
        worktree = working_tree(location)
    except LanesError as exc:
        refusals.append(str(exc))
    if location is not None and location.origin is not None:
        plan.warnings = lead_checkout.changed_since(repo, lane_id, location.origin.lead_checkout)
    if target in config.lanes.protected_branches:
        refusals.append(f"the target branch {target!r} is protected (lanes.protected_branches); "
                        "accept into a programme branch, or change the config")
    if refusals:
        return plan
    if packet:
        current = worktrees.changed_files(worktree, record.base_sha)
        digest = worktrees.worktree_digest(worktree, current)
        if digest != packet.get("worktree_digest"):
            refusals.append(f"the worktree changed since its check; run `lanes-tui check {lane_id}` first")
        plan.files = current
        plan.outside_scope = outside_scope(current, plan.scope)
        _check_scope(plan, override)
    if target_sha:
        lane_head = git_out(worktree, "rev-parse", "HEAD")
        plan.needs_rebase = not is_ancestor(repo, target_sha, lane_head)
        plan.target_checkout = checkout_of(repo, target)
        if plan.target_checkout is not None:
            touched = set(plan.files) | set(_diff_names(repo, record.base_sha, lane_head))
            if plan.needs_rebase:
                touched |= set(_diff_names(repo, record.base_sha, target_sha))
            dirty = sorted(touched & set(dirty_files(plan.target_checkout)))
            if dirty:
                refusals.append(f"your checkout {plan.target_checkout} has uncommitted changes the merge would touch: "
                                + ", ".join(dirty[:8]) + "; commit or stash them first")
    return plan


def _check_state(plan: AcceptPlan, record: LaneRecord, packet: dict[str, Any], override: str | None) -> None:
    if record.state in ("accepted", "abandoned"):
        plan.refusals.append(f"the lane is already {record.state}")
    elif record.state in LIVE_STATES or record.state == "checking":
        plan.refusals.append(f"the lane is still {record.state}; wait for it to finish")
    elif not packet:
        plan.refusals.append(f"the lane has no packet; run `lanes-tui check {record.id}`")
    elif record.state != "ready":
        if override is None:
            plan.refusals.append(f"the lane is {record.state}, not ready ({record.state_reason}); "
                                 "fix it, or accept with --override REASON")
        elif not override.strip():
            plan.refusals.append("--override needs a reason")
        elif record.state not in OVERRIDABLE:
            plan.refusals.append(f"a {record.state} lane cannot be accepted, even with --override")


def _check_scope(plan: AcceptPlan, override: str | None) -> None:
    """Files outside the lane's scope refuse the accept, unless the lead overrides with a reason
    (recorded like every override: in the journal and the packet)."""
    if not plan.outside_scope:
        return
    if override is None:
        plan.refusals.append(describe_outside(plan.lane_id, plan.outside_scope, plan.scope))
    elif not override.strip() and "--override needs a reason" not in plan.refusals:
        plan.refusals.append("--override needs a reason")


def _check_journal(plan: AcceptPlan, lane: LanePaths) -> None:
    """A journal left by an interrupted accept of this lane is resolved first (by reconcile)."""
    if not lane.accept_journal.exists():
        return
    stuck = (read_journal(lane) or {}).get("stuck")
    if isinstance(stuck, dict):
        plan.refusals.append(f"an interrupted accept of this lane cannot be finished: {stuck.get('what')} — "
                             f"{stuck.get('fix')}; then `lanes-tui status` finishes it")
    else:
        plan.refusals.append("an interrupted accept of this lane is not finished yet; `lanes-tui status` finishes "
                             "or rolls it back")


def checkout_of(repo: Path, branch: str) -> Path | None:
    """The worktree (the lead's checkout, usually) where `branch` is checked out, if any."""
    for entry in list_worktrees(repo):
        if entry.branch == branch:
            return entry.path
    return None


def dirty_files(checkout: Path) -> list[str]:
    """Paths with uncommitted changes in a checkout (staged, unstaged, untracked), from porcelain -z."""
    out = run_git(checkout, "status", "--porcelain", "-z", "--untracked-files=all").stdout
    names = []
    items = nul_list(out)
    skip = False
    for item in items:
        if skip:
            skip = False
            continue
        status, name = item[:2], item[3:]
        names.append(name)
        if "R" in status or "C" in status:
            skip = True  # the next entry is the rename's source
    return names


def _diff_names(repo: Path, a: str, b: str) -> list[str]:
    if not a or not b or a == b:
        return []
    return nul_list(run_git(repo, "diff", "--name-only", "-z", a, b).stdout)


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    return run_git(repo, "merge-base", "--is-ancestor", ancestor, descendant, check=False).returncode == 0

