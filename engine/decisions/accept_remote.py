"""Accept of a lane that ran on a cluster node (`record.runner != "local"`): fetch, then fast-forward.

A remote lane has no worktree on the lead's machine: its gates ran on the node, and the packet the
mirror keeps (`packet.json`, as the node wrote it) is what the plan reads (`accept_plan.
plan_remote_accept`, which refuses a target that moved). The accept (`Accept.run`) then asks the
runner to publish the lane's branch and fetches it (`RemoteRunner.fetch_branch`), checks the commit
against git — it exists here, it descends from the target, it changes exactly the files the gates
checked — and moves the target by one fast-forward. A node cannot rebase on the lead's behalf and
the lead has no worktree to rebase in, so a target that moved since the lane's base is refused: the
lane is relaunched from the new target, or merged by hand.

The steps are journalled in `accept.json` like a local accept (`fetch`, `merge`, `cleanup`), so a
process killed anywhere is finished or rolled back by `resolve_remote` (from reconcile): the target
only ever moves by one fast-forward, and the lane's actor is discarded only once the target holds
the lane's commit. This module holds the steps; `decisions.accept` runs them in order (it imports
this module, never the other way: the accept is passed in as `AcceptSteps`).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Protocol

from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.accept_journal import AcceptJournal
from lanes_tui.engine.decisions.accept_plan import AcceptPlan
from lanes_tui.engine.decisions.packet import read_packet, write_packet
from lanes_tui.engine.git.checkouts import is_ancestor, target_commit
from lanes_tui.engine.git.commands import nul_list, run_git
from lanes_tui.engine.lanes.runner import RemoteRunner
from lanes_tui.engine.state.paths import LanePaths
from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)

__all__ = ["AcceptSteps", "discard_after_accept", "discard_remote", "fetch_lane", "finish_remote", "resolve_remote"]


class AcceptSteps(Protocol):
    """What the steps need of the accept that runs them (`decisions.accept.Accept`)."""

    repo: Path
    lane_id: str
    store: LaneStore
    lane: LanePaths
    clock: Clock
    journal_path: Path

    def journal(self, step: str, **data: Any) -> dict[str, Any]: ...

    def read_journal(self) -> AcceptJournal | None: ...


async def fetch_lane(accept: AcceptSteps, runner: RemoteRunner, plan: AcceptPlan, override: str | None,
                     override_review: str | None) -> str:
    """Journal the `fetch` step, have the node publish and the lead fetch the lane's branch, verify
    the commit against git; its sha. Any failure rolls the journal back: nothing was merged."""
    record = accept.store.read(accept.lane_id)
    accept.journal("fetch", target=plan.target, target_sha=plan.target_sha, state_before=record.state,
                   base_sha_before=record.base_sha, override=override, outside_scope=plan.outside_scope,
                   override_review=override_review, review_refusals=plan.review_refusals, remote=record.runner)
    try:
        commit = await runner.fetch_branch(accept.lane_id)
        _verify_fetched(accept.repo, plan, commit)
    except BaseException:
        _roll_back(accept, "the lane's branch could not be fetched and verified; nothing was merged")
        raise
    return commit


async def discard_after_accept(accept: AcceptSteps, runner: RemoteRunner) -> list[str]:
    """The target holds the lane's commit: its actor goes. A failure here is a warning, never an
    accept undone (the lead can still discard it: `lanes-tui abandon` refuses an accepted lane, so
    the warning says so plainly)."""
    try:
        removed = await discard_remote(runner, accept.store, accept.lane_id)
    except Exception as exc:
        note = f"the lane is accepted, but its actor was not discarded: {exc}"
        accept.store.event(accept.lane_id, "notice", text=note)
        return [note]
    accept.store.event(accept.lane_id, "discarded", removed=removed)
    return []


async def discard_remote(runner: RemoteRunner, store: LaneStore, lane_id: str) -> list[str]:
    """`runner.discard` (the actor stopped, its worktree and branch removed on the node), keeping the
    lane's record and packet here: the lead's history of the lane outlives its actor, as a local
    lane's state folder outlives its worktree. A runner that dropped the mirror folder gets them back."""
    record = store.read(lane_id)
    lane = store.lane_paths(lane_id)
    packet = read_packet(lane)
    removed = await runner.discard(lane_id)
    if not lane.record.exists():
        lane.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        store.write(record)
        if packet is not None:
            write_packet(lane, packet)
        removed.append(f"(the runner dropped the mirror of {lane_id}; its record and packet were kept)")
    return removed


def _verify_fetched(repo: Path, plan: AcceptPlan, commit: str) -> None:
    """The fetched commit must be here, descend from the target, and change what the gates checked."""
    if run_git(repo, "cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode != 0:
        raise LanesError(f"the fetched branch of {plan.lane_id} names {commit[:12]!r}, which is not a commit here",
                         f"check `git fetch` from the shared remote, then accept {plan.lane_id} again")
    if commit == plan.target_sha or not is_ancestor(repo, plan.target_sha, commit):
        raise LanesError(f"the published branch of {plan.lane_id} ({commit[:10]}) is not ahead of {plan.target} "
                         f"({plan.target_sha[:10]})",
                         f"relaunch the lane (`lanes-tui recover {plan.lane_id} --relaunch`)")
    changed = set(nul_list(run_git(repo, "diff", "--name-only", "-z", plan.target_sha, commit).stdout))
    if changed != set(plan.files):
        extra = sorted(changed ^ set(plan.files))
        raise LanesError(f"the published branch of {plan.lane_id} does not hold what its gates checked (differs in "
                         + ", ".join(extra[:8]) + ")", f"relaunch the lane (`lanes-tui recover {plan.lane_id} "
                         "--relaunch`) or abandon it")


def finish_remote(accept: AcceptSteps, merged_sha: str, override: str | None, override_review: str | None) -> None:
    """The target holds the lane's commit: record it (packet, state), drop the fetched branch, end the journal."""
    store, lane_id = accept.store, accept.lane_id
    record = store.read(lane_id)
    packet = read_packet(accept.lane) or {}
    packet["accepted_sha"] = merged_sha
    packet["accepted_at"] = accept.clock.time()
    if override:
        packet["override"] = override
        journal = accept.read_journal()
        outside = list(journal.outside_scope) if journal is not None else None
        if outside:
            packet["override_outside_scope"] = outside
    if override_review:
        packet["override_review"] = {"reason": override_review,
                                     "refusals": list(journal.review_refusals) if journal is not None else []}
    write_packet(accept.lane, packet)
    _drop_fetched_branch(accept.repo, lane_id, merged_sha)
    store.transition(record, "accepted", f"merged into {record.target_branch} at {merged_sha[:10]}",
                     sha=merged_sha, **({"override": override} if override else {}),
                     **({"override_review": override_review} if override_review else {}))
    with contextlib.suppress(FileNotFoundError):
        accept.journal_path.unlink()


def _drop_fetched_branch(repo: Path, lane_id: str, merged_sha: str) -> None:
    """Delete the local `lane/<id>` the fetch made, only while git says it names the merged commit."""
    ref = f"refs/heads/lane/{lane_id}"
    run_git(repo, "update-ref", "-d", ref, merged_sha, check=False)  # git refuses when it names another commit


def _roll_back(accept: AcceptSteps, reason: str) -> None:
    journal = accept.read_journal()
    record = accept.store.read(accept.lane_id)
    state_before = journal.state_before if journal is not None and journal.state_before is not None else record.state
    with contextlib.suppress(FileNotFoundError):
        accept.journal_path.unlink()
    if record.state != state_before:
        accept.store.transition(record, state_before, reason)


def resolve_remote(accept: AcceptSteps, journal: AcceptJournal) -> str:
    """Finish (the target holds the commit) or roll back an interrupted accept of a remote lane."""
    target = journal.target or ""
    target_sha = target_commit(accept.repo, target) if target else ""
    if not target_sha:
        raise LanesError(f"the target branch {target!r} of the interrupted accept does not exist any more",
                         f"recreate it at the commit it had (`git branch {target} SHA`, see `git reflog`)")
    merged = journal.merged
    if journal.step in ("merge", "cleanup") and merged and is_ancestor(accept.repo, merged, target_sha):
        finish_remote(accept, merged, journal.override, journal.override_review)
        return "the merge had happened: accept finished"
    _roll_back(accept, "an interrupted accept was rolled back; nothing was merged")
    return f"rolled back to {journal.state_before if journal.state_before is not None else 'ready'}"
