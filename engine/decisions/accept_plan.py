"""What an accept would do, and every reason it must refuse, before anything is touched.

The dashboard's confirm modal shows this plan (gates, review, files, target, commits); the accept
itself re-derives it under the accept lock so nothing can change between the check and the merge.
A lane that ran on a cluster node is planned from its record and the node's packet as mirrored
(`plan_remote_accept`): no worktree here to look at, no rebase, a target that moved is refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.accept_journal import read_journal
from lanes_tui.engine.decisions.gates.plan import describe_gates
from lanes_tui.engine.decisions.lane_diff import work_digest
from lanes_tui.engine.decisions.packet import read_packet
from lanes_tui.engine.decisions.review.prompt import describe_review, describe_verification, review_detail, verification
from lanes_tui.engine.decisions.scope import describe_outside, outside_scope
from lanes_tui.engine.git import git_snapshot, lead_checkout, upstream, worktrees
from lanes_tui.engine.git.checkouts import checkout_of, diff_names, dirty_files, is_ancestor, target_commit
from lanes_tui.engine.git.commands import git_out
from lanes_tui.engine.git.frozen_work import frozen_problem, tree_names
from lanes_tui.engine.git.lane_paths import LaneLocation, locate_lane, working_tree
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import LanePaths, StatePaths
from lanes_tui.engine.state.seals import check_fix, seal_problem
from lanes_tui.engine.state.store import LaneStore

#: States from which an accept may go ahead with `--override REASON`.
OVERRIDABLE = frozenset({"rejected", "exited", "stalled", "lost", "conflict"})
#: How the refusal of a lane that changed nothing begins: the accept queue skips such a lane.
NOTHING_TO_MERGE = "nothing to merge"


class NothingToMerge(LanesError):
    """The accept's first refusal is that the lane has nothing to merge: no later accept can change
    that (only abandoning it), so the accept queue skips the lane instead of stopping at it."""


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
    #: The packet's review as `review.prompt.review_detail` reads it ({} when there is none), and whether
    #: the lane changed since (its diff digest differs from the one the reviewer read).
    review_detail: dict[str, Any] = field(default_factory=dict)
    review_stale: bool = False
    #: The lead's `verify ID --evidence TEXT`, and whether the lane changed since.
    verification: dict[str, Any] | None = None
    verification_stale: bool = False
    #: `accept --override-review REASON`: accept over a BLOCKING or stale review, the reason recorded.
    override_review: str | None = None
    #: The refusals only `--override-review REASON` lifts (a BLOCKING or stale review).
    review_refusals: list[str] = field(default_factory=list)
    #: The work frozen before the gates (`git.frozen_work`): what the accept commits; None for a lane whose
    #: packet has none and in which no gate ever ran (its worktree is the agent's work as it stands).
    frozen_sha: str | None = None
    #: The files the gates left in the worktree on top of the frozen work: never merged.
    gate_files: list[str] = field(default_factory=list)

    @property
    def review_blocked(self) -> bool:
        """The review is among the refusals, and `--override-review REASON` would lift it."""
        review = set(self.review_refusals)
        return bool(self.refusals) and bool(review) and all(r in review for r in self.refusals)

    @property
    def ok(self) -> bool:
        return not self.refusals

    def raise_if_refused(self) -> None:
        if self.refusals:
            empty = self.refusals[0].startswith(NOTHING_TO_MERGE)
            raise (NothingToMerge if empty else LanesError)(f"accept {self.lane_id} refused: {self.refusals[0]}")

    def describe(self, *, scope: bool = True) -> list[str]:
        """Lines for the confirm modal and `accept --dry-run`; `scope=False` leaves out the scope
        lines (the accept modal shows the scope and the files outside it in a block of its own)."""
        lines = [
            f"lane {self.lane_id} ({self.state}) → {self.target} at {self.target_sha[:10]}",
            f"gates: {self.gates_status}",
            *describe_review(self.review_detail or None, stale=self.review_stale),
            describe_verification(self.verification, stale=self.verification_stale,
                                  when=_when(self.verification.get("at") if self.verification else None)),
            f"files ({len(self.files)}): " + (", ".join(self.files[:12]) + (" …" if len(self.files) > 12 else "")
                                             if self.files else "none"),
            ("the target moved since the lane started: the lane is rebased and its gates run again"
             if self.needs_rebase else "fast-forward of the target"),
            "then the worktree and branch " + self.branch + " are removed",
        ]
        if self.gate_files:  # right after the files that are merged
            at = next(i for i, line in enumerate(lines) if line.startswith("files ("))
            lines.insert(at + 1, f"files the gates left, not merged ({len(self.gate_files)}): "
                         + ", ".join(self.gate_files[:12]) + (" …" if len(self.gate_files) > 12 else ""))
        if scope and self.scope:
            lines.append("scope: " + ", ".join(self.scope))
            lines.append(f"outside its scope ({len(self.outside_scope)}): " + (", ".join(self.outside_scope[:12])
                         + (" …" if len(self.outside_scope) > 12 else "") if self.outside_scope else "none"))
        if self.override:
            lines.append(f"override: {self.override}")
        if self.override_review:
            lines.append(f"override of the review: {self.override_review}")
        lines.extend(f"WARNING: {w}" for w in self.warnings)
        lines.extend(f"REFUSED: {r}" for r in self.refusals)
        return lines


def _when(at: object) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if isinstance(at, float) else ""


def plan_accept(repo: Path, config: Config, lane_id: str, *, override: str | None = None,
                override_review: str | None = None) -> AcceptPlan:
    store = LaneStore(StatePaths(repo))
    record = store.read(lane_id)
    if record.runner != "local":  # ran on a cluster node: no worktree here, the node's packet is the evidence
        return plan_remote_accept(repo, config, record, override=override, override_review=override_review)
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
        review_detail=review_detail(packet) or {}, verification=verification(packet), override_review=override_review,
    )
    plan.outside_scope = outside_scope(plan.files, plan.scope)  # the packet's files, until the worktree's below
    if not plan.gates:  # no check ran yet: the gates one would run (the project's venv, detected commands)
        plan.gates = [{"command": line, "status": "planned"} for line in describe_gates(repo, config.gates, worktree)]
    _check_state(plan, record, packet, override)
    _check_journal(plan, store.lane_paths(lane_id))
    location: LaneLocation | None = None
    try:
        location = locate_lane(repo, lane_id, record, default_root=config.lanes.worktree_root)
        plan.worktree, plan.branch = location.worktree, location.branch
        worktree = working_tree(location)
        git_snapshot.refuse_if_changed(repo, lane_id)  # the shared config, hooks, attributes: as at its start
    except LanesError as exc:
        refusals.append(str(exc))
    if location is not None and location.origin is not None:
        plan.warnings = lead_checkout.changed_since(repo, lane_id, location.origin.lead_checkout)
    behind = upstream.target_warning(repo, target)  # from the last fetch: `Accept.run` fetches, the modal does not
    if behind:
        plan.warnings.append(behind)
    if target in config.lanes.protected_branches:
        refusals.append(f"the target branch {target!r} is protected (lanes.protected_branches); "
                        "accept into a programme branch, or change the config")
    check_seals(plan.refusals, store.lane_paths(lane_id), lane_id)  # last: a more exact refusal reads first
    if refusals:
        return plan
    if packet:
        current = worktrees.changed_files(worktree, record.base_sha)
        digest = worktrees.worktree_digest(worktree, current)
        if digest != packet.get("worktree_digest"):
            refusals.append(f"the worktree changed since its check; run `lanes-tui check {lane_id}` first")
        plan.files = _frozen_files(plan, repo, worktree, record, packet, current)
        if not plan.files:  # a lane that changed nothing would "accept" as an empty commit, or as nothing at all
            refusals.append(f"nothing to merge: abandon it (`lanes-tui abandon {lane_id}`)")
        plan.outside_scope = outside_scope(plan.files, plan.scope)
        _check_scope(plan, override)
        _check_review(plan, worktree, record.base_sha)
    if target_sha:
        lane_head = git_out(worktree, "rev-parse", "HEAD")
        plan.needs_rebase = not is_ancestor(repo, target_sha, lane_head)
        plan.target_checkout = checkout_of(repo, target)
        if plan.target_checkout is not None:
            touched = set(plan.files) | set(diff_names(repo, record.base_sha, lane_head))
            if plan.needs_rebase:
                touched |= set(diff_names(repo, record.base_sha, target_sha))
            dirty = sorted(touched & set(dirty_files(plan.target_checkout)))
            if dirty:
                refusals.append(f"your checkout {plan.target_checkout} has uncommitted changes the merge would touch: "
                                + ", ".join(dirty[:8]) + "; commit or stash them first")
    return plan


# --- a lane that ran on a cluster node (`record.runner != "local"`) ---------------------------------

def plan_remote_accept(repo: Path, config: Config, record: LaneRecord, *, override: str | None = None,
                       override_review: str | None = None) -> AcceptPlan:
    """The plan of a remote lane's accept, from its record and the node's packet as mirrored."""
    packet = read_packet(StatePaths(repo).lane(record.id)) or {}
    target = record.target_branch
    refusals: list[str] = []
    target_sha = target_commit(repo, target)
    if not target_sha:
        refusals.append(f"the target branch {target!r} does not exist any more")
    files = [str(f) for f in packet.get("changed_files", [])]
    plan = AcceptPlan(
        lane_id=record.id, state=record.state, target=target, target_sha=target_sha, base_sha=record.base_sha,
        worktree=Path(record.worktree), branch=record.branch, files=files,
        gates_status=str(packet.get("gates_status", "none")), gates=list(packet.get("gates", [])),
        review=str(packet.get("review", "MISSING")), needs_rebase=False, target_checkout=None,
        override=override, refusals=refusals, scope=list(record.scope),
        review_detail=review_detail(packet) or {}, verification=verification(packet), override_review=override_review,
    )
    if record.state == "unreachable":  # its node may still be working on it: nothing is final yet
        refusals.append(f"the lane is unreachable ({record.state_reason}); wait until its node answers again, "
                        f"or it is lost and can be relaunched: `lanes-tui wait {record.id}`")
    else:
        _check_state(plan, record, packet, override)
    _check_journal(plan, StatePaths(repo).lane(record.id))
    if target in config.lanes.protected_branches:
        refusals.append(f"the target branch {target!r} is protected (lanes.protected_branches); "
                        "accept into a programme branch, or change the config")
    if target_sha and record.base_sha and target_sha != record.base_sha:
        refusals.append(target_moved(record, target_sha))
    check_seals(refusals, StatePaths(repo).lane(record.id), record.id)  # the mirror's copies, as written here
    if packet and not files and not refusals:
        refusals.append(f"nothing to merge: abandon it (`lanes-tui abandon {record.id}`)")
    plan.outside_scope = outside_scope(files, plan.scope)
    _check_scope(plan, override)
    _check_remote_review(plan)
    if target_sha and not refusals:
        plan.target_checkout = checkout_of(repo, target)
        if plan.target_checkout is not None:
            dirty = sorted(set(files) & set(dirty_files(plan.target_checkout)))
            if dirty:
                refusals.append(f"your checkout {plan.target_checkout} has uncommitted changes the merge would touch: "
                                + ", ".join(dirty[:8]) + "; commit or stash them first")
    return plan


def target_moved(record: LaneRecord, target_sha: str) -> str:
    """The refusal when the target is no longer where the lane started: no rebase on a remote lane."""
    return (f"target moved: {record.target_branch} is at {target_sha[:10]}, the lane started from "
            f"{record.base_sha[:10]}; relaunch the lane (`lanes-tui recover {record.id} --relaunch`, once it is "
            f"settled) or merge its branch by hand (`git fetch REMOTE lane/{record.id}`, then rebase it)")


def _check_remote_review(plan: AcceptPlan) -> None:
    """A BLOCKING review refuses unless `--override-review REASON`; staleness is the node's to judge
    (its worktree is not here), so the packet's verdict is taken as the mirror has it."""
    detail = plan.review_detail
    if detail.get("verdict") != "BLOCKING":
        return
    count = len(detail.get("findings") or [])
    plan.review_refusals.append(
        f"the review is BLOCKING ({detail.get('reviewer')}: {count} finding{'' if count == 1 else 's'}); relaunch "
        f"the lane (`lanes-tui recover {plan.lane_id} --relaunch`) or accept with --override-review REASON")
    if plan.override_review is None:
        plan.refusals.extend(plan.review_refusals)
    elif not plan.override_review.strip():
        plan.refusals.append("--override-review needs a reason")


def _check_state(plan: AcceptPlan, record: LaneRecord, packet: dict[str, Any], override: str | None) -> None:
    if record.state in ("accepted", "abandoned"):
        plan.refusals.append(f"the lane is already {record.state}")
    elif record.state in LIVE_STATES or record.state == "checking":
        plan.refusals.append(f"the lane is still {record.state}; wait for it to finish")
    elif not packet:
        plan.refusals.append(f"the lane has no packet; run `lanes-tui check {record.id}`")
    elif record.state == "rejected" and _rejected_by_review(packet):
        pass  # the review's own check (`_check_review`) refuses it, and `--override-review` lifts it
    elif record.state != "ready":
        if override is None:
            plan.refusals.append(f"the lane is {record.state}, not ready ({record.state_reason}); "
                                 "fix it, or accept with --override REASON")
        elif not override.strip():
            plan.refusals.append("--override needs a reason")
        elif record.state not in OVERRIDABLE:
            plan.refusals.append(f"a {record.state} lane cannot be accepted, even with --override")


def _rejected_by_review(packet: dict[str, Any]) -> bool:
    """Rejected by a BLOCKING review alone: the gates passed, so no `--override` is needed on top."""
    detail = review_detail(packet)
    return detail is not None and detail["verdict"] == "BLOCKING" and packet.get("gates_status") in ("passed", "none")


def _check_scope(plan: AcceptPlan, override: str | None) -> None:
    """Files outside the lane's scope refuse the accept, unless the lead overrides with a reason
    (recorded like every override: in the journal and the packet)."""
    if not plan.outside_scope:
        return
    if override is None:
        plan.refusals.append(describe_outside(plan.lane_id, plan.outside_scope, plan.scope))
    elif not override.strip() and "--override needs a reason" not in plan.refusals:
        plan.refusals.append("--override needs a reason")


def _check_review(plan: AcceptPlan, worktree: Path, base_sha: str) -> None:
    """A BLOCKING review, or one of a diff the lane no longer has (stale), refuses the accept unless the
    lead gives `--override-review REASON`. A MISSING review does not: it is shown as such."""
    detail, verified = plan.review_detail, plan.verification
    if not detail and verified is None:
        return
    digest = work_digest(worktree, base_sha, plan.frozen_sha)
    plan.review_stale = bool(detail) and detail.get("diff_digest") != digest
    plan.verification_stale = verified is not None and verified.get("diff_digest") != digest
    if detail.get("verdict") == "BLOCKING" and not plan.review_stale:
        count = len(detail.get("findings") or [])
        plan.review_refusals.append(
            f"the review is BLOCKING ({detail.get('reviewer')}: {count} finding{'' if count == 1 else 's'}); fix it "
            f"(`lanes-tui recover {plan.lane_id} --relaunch` gives the agent the findings) or accept with "
            "--override-review REASON")
    elif plan.review_stale and detail.get("verdict") != "MISSING":
        plan.review_refusals.append(f"the review is stale: the lane changed since it was reviewed; review again: "
                                    f"`lanes-tui review {plan.lane_id}` (or accept with --override-review REASON)")
    if not plan.review_refusals:
        return
    if plan.override_review is None:
        plan.refusals.extend(plan.review_refusals)
    elif not plan.override_review.strip():
        plan.refusals.append("--override-review needs a reason")


def _frozen_files(plan: AcceptPlan, repo: Path, worktree: Path, record: LaneRecord, packet: dict[str, Any],
                  current: list[str]) -> list[str]:
    """The files the accept merges: those of the work frozen at the lane's check (base..frozen), never the
    gates' byproducts. A snapshot the ref or the lane's HEAD disagree with is refused; so is a packet
    from a check that ran gates without freezing (from before lanes-tui froze: its files may be the gates')."""
    frozen = packet.get("frozen_sha")
    plan.gate_files = [str(f) for f in packet.get("gate_files") or []]
    if isinstance(frozen, str) and frozen:
        plan.frozen_sha = frozen
        problem = frozen_problem(repo, worktree, record.id, frozen)
        if problem is None:
            return tree_names(repo, record.base_sha, frozen)
        plan.refusals.append(f"{problem}; run `lanes-tui check {record.id}` again")
        return list(packet.get("changed_files") or [])
    if packet.get("gates"):
        plan.refusals.append(f"its packet is from a check that did not freeze its work; run `lanes-tui check "
                             f"{record.id}`")
    return current  # no gate ever ran in it: the worktree is the agent's work as it stands


def _check_journal(plan: AcceptPlan, lane: LanePaths) -> None:
    """A journal left by an interrupted accept of this lane is resolved first (by reconcile)."""
    if not lane.accept_journal.exists():
        return
    try:
        journal = read_journal(lane)
        stuck = journal.stuck if journal is not None else None
    except LanesError as exc:  # a field of the wrong shape: as stuck as a journal reconcile gave up on
        stuck = {"what": exc.what, "fix": exc.fix or ""}
    if stuck is not None:
        plan.refusals.append(f"an interrupted accept of this lane cannot be finished: {stuck.get('what')} — "
                             f"{stuck.get('fix')}; then `lanes-tui status` finishes it")
    else:
        plan.refusals.append("an interrupted accept of this lane is not finished yet; `lanes-tui status` finishes "
                             "or rolls it back")


def check_seals(refusals: list[str], lane: LanePaths, lane_id: str) -> None:
    """The packet and the record must be the ones lanes-tui last wrote (`state.seals`): a gate's
    daemon or a hand edit that flipped `gates_status` or retargeted the lane is refused here."""
    for path in (lane.packet, lane.record):
        problem = seal_problem(path)
        if problem is not None:
            refusals.append(f"{problem}; {check_fix(lane_id)}")
