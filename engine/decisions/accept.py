"""The guarded accept: commit → (rebase + gates again) → fast-forward → cleanup, journalled.

Accepts are serialised by a lock. Each step is written to `accept.json` in the lane folder before it
runs, so a process killed anywhere leaves enough behind for `finish_interrupted_accepts` (run on
every engine start and by `status`) to finish the accept or roll it back: the target branch only
ever moves by one fast-forward, and nothing is deleted before the target holds the lane's commit.
A lane that ran on a cluster node (`record.runner != "local"`) takes `accept_remote`'s way: its
branch is fetched from the shared remote and fast-forwarded, never rebased here.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config, load_config
from lanes_tui.engine.core import slots
from lanes_tui.engine.core.atomic import write_json_atomic
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.debug import crash_point  # `LANES_TUI_CRASH_AT=merge:before`: a test's kill -9
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.accept_journal import AcceptJournal, mark_stuck, raw_journal, read_journal
from lanes_tui.engine.decisions.accept_plan import AcceptPlan, NothingToMerge, plan_accept
from lanes_tui.engine.decisions.accept_remote import discard_after_accept, fetch_lane, finish_remote, resolve_remote
from lanes_tui.engine.decisions.check import gate_lane
from lanes_tui.engine.decisions.commit_hooks import CommitHooks, HookRefused
from lanes_tui.engine.decisions.packet import read_packet, write_packet
from lanes_tui.engine.decisions.runners import remote_runner
from lanes_tui.engine.git.accept_steps import commit_worktree, fast_forward, keeps_changes, rebase, rebase_in_progress
from lanes_tui.engine.git.checkouts import is_ancestor
from lanes_tui.engine.git.commands import git_out, run_git
from lanes_tui.engine.git.frozen_work import restore_gate_files
from lanes_tui.engine.git.lane_paths import LaneLocation, git_witness, locate_lane, remove_lane_worktree
from lanes_tui.engine.git.upstream import fetch_base
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore, lane_operation

log = logging.getLogger(__name__)

LOCK_WAIT_S = 300.0


@dataclass(frozen=True)
class AcceptOutcome:
    lane_id: str
    state: str  # accepted | conflict | rejected
    message: str
    merged_sha: str | None = None
    conflict_files: tuple[str, ...] = ()
    #: The plan's warnings (the lead checkout changed since the lane started), for the lead to read.
    warnings: tuple[str, ...] = ()


class Accept:
    def __init__(self, repo: Path, config: Config, lane_id: str, clock: Clock | None = None) -> None:
        self.repo = repo
        self.config = config
        self.lane_id = lane_id
        self.clock = clock or RealClock()
        self.paths = StatePaths(repo)
        self.store = LaneStore(self.paths, self.clock)
        self.lane = self.paths.lane(lane_id)
        self.journal_path = self.lane.accept_journal

    def journal(self, step: str, **data: Any) -> dict[str, Any]:
        current = raw_journal(self.lane) or {}  # the next step's fields on top of what the last wrote
        current.update(data, step=step, lane=self.lane_id, t=self.clock.time())
        write_json_atomic(self.journal_path, current)
        self.store.event(self.lane_id, "accept-step", step=step)
        crash_point(f"{step}:before")
        return current

    def read_journal(self) -> AcceptJournal | None:
        return read_journal(self.lane)

    def location(self) -> LaneLocation:
        """The lane's worktree and branch, derived from its id and own root, never taken from lane.json."""
        record = self.store.read(self.lane_id)
        return locate_lane(self.repo, self.lane_id, record, default_root=self.config.lanes.worktree_root)

    async def run(self, *, message: str | None, override: str | None,
                  override_review: str | None = None, no_verify: str | None = None) -> AcceptOutcome:
        """`no_verify`: the lead's reason to skip the repository's commit hooks (`commit_hooks`), recorded."""
        if no_verify is not None and not no_verify.strip():
            raise LanesError("--no-verify needs a reason", "say why the hooks are skipped "
                             f"(`lanes-tui accept {self.lane_id} --no-verify REASON`); it is recorded with the accept")
        lock = await slots.acquire(self.paths.locks / "accept", 1, {"lane": self.lane_id}, budget_s=LOCK_WAIT_S)
        if lock is None:
            raise LanesError("another accept is still running", "try again when it has finished")
        with lock:
            finish_interrupted_accepts(self.repo, self.config)
            with lane_operation(self.paths, self.lane_id, "accept"):
                # The upstream first (capped; offline goes on from the last fetch): a target behind it is said.
                fetched = fetch_base(self.repo, self.store.read(self.lane_id).target_branch)
                for notice in fetched.notices:
                    self.store.event(self.lane_id, "notice", text=notice)
                plan = plan_accept(self.repo, self.config, self.lane_id, override=override,
                                   override_review=override_review)
                plan.raise_if_refused()
                lifted = override_review if plan.review_refusals else None
                if self.store.read(self.lane_id).runner != "local":  # ran on a cluster node: fetch, then ff
                    outcome = await self._run_remote(plan, override, lifted)
                else:
                    outcome = await self._run(plan, message, override, lifted, no_verify)
                return replace(outcome, warnings=tuple(dict.fromkeys([*fetched.notices, *plan.warnings,
                                                                       *outcome.warnings])))

    async def _run(self, plan: AcceptPlan, message: str | None, override: str | None,
                   override_review: str | None, no_verify: str | None = None) -> AcceptOutcome:
        record = self.store.read(self.lane_id)
        msg = message or f"lane {self.lane_id}: {_first_line(record.prompt)}"
        self.journal("commit", target=plan.target, target_sha=plan.target_sha, state_before=record.state,
                     base_sha_before=record.base_sha,
                     lane_head_before=git_out(plan.worktree, "rev-parse", "HEAD"), override=override,
                     outside_scope=plan.outside_scope,  # what the override let through, kept with its reason
                     override_review=override_review, review_refusals=plan.review_refusals, no_verify=no_verify)
        hooks = None if no_verify else CommitHooks(self.repo, self.config, self.store, self.lane_id, plan.worktree,
                                                   self.clock)  # the lead's pre-commit / commit-msg, contained
        try:
            lane_head = commit_worktree(plan.worktree, plan.files, msg, frozen=plan.frozen_sha, hooks=hooks)
        except HookRefused as refused:  # nothing was committed: the lane stays as it was
            self.journal_path.unlink()
            return AcceptOutcome(self.lane_id, "rejected", refused.report)
        crash_point("commit:after")
        if plan.needs_rebase:
            self.journal("rebase", lane_head=lane_head)
            if plan.frozen_sha and plan.gate_files:  # the gates' files are not the agent's: they would stop the rebase
                restore_gate_files(plan.worktree, plan.frozen_sha, plan.gate_files)
            conflict = rebase(plan.worktree, plan.target_sha)
            if conflict is not None:
                return self._conflict(conflict)
            crash_point("rebase:after")
            lane_head = git_out(plan.worktree, "rev-parse", "HEAD")
            record = self.store.read(self.lane_id)
            record.base_sha = plan.target_sha
            self.store.write(record)
            if not keeps_changes(plan.worktree, plan.target_sha, lane_head):  # superseded: the target already has it
                return self._superseded(plan.target)
            packet = await gate_lane(self.repo, self.config, self.store, record, by_lead=True, clock=self.clock)
            if packet.get("gates_status") not in ("passed", "none") and override is None:
                self.journal_path.unlink()
                return AcceptOutcome(self.lane_id, "rejected", f"accept {self.lane_id} stopped: gates failed after "
                                     f"rebasing onto {plan.target}; nothing was merged")
        self.journal("merge", lane_head=lane_head)
        fast_forward(self.repo, plan.target, plan.target_sha, lane_head)
        crash_point("merge:after")
        self.journal("cleanup", merged_sha=lane_head)
        self._cleanup(lane_head, override, override_review)
        text = f"accepted {self.lane_id} into {plan.target} at {lane_head[:10]}"
        return AcceptOutcome(self.lane_id, "accepted", text, merged_sha=lane_head)

    async def _run_remote(self, plan: AcceptPlan, override: str | None, override_review: str | None) -> AcceptOutcome:
        """A lane that ran on a cluster node (`accept_remote`): fetch its published branch, verify it, one
        fast-forward, then its actor is discarded. No commit or rebase here: its worktree is on the node."""
        runner = remote_runner(self.repo, self.config, self.store.read(self.lane_id))
        lane_head = await fetch_lane(self, runner, plan, override, override_review)
        self.journal("merge", lane_head=lane_head)
        fast_forward(self.repo, plan.target, plan.target_sha, lane_head)
        crash_point("merge:after")
        self.journal("cleanup", merged_sha=lane_head)
        finish_remote(self, lane_head, override, override_review)
        warnings = await discard_after_accept(self, runner)
        text = f"accepted {self.lane_id} into {plan.target} at {lane_head[:10]} (fetched from the shared remote)"
        return AcceptOutcome(self.lane_id, "accepted", text, merged_sha=lane_head, warnings=tuple(warnings))

    def _superseded(self, target: str) -> AcceptOutcome:
        """The rebase left nothing of the lane's own (another accept merged the same change): the target
        does not move, and the lane is not called accepted at the target's own commit. It ends `exited`
        with why, and the queue skips it as it skips any lane with nothing to merge."""
        self.journal_path.unlink()
        record = self.store.read(self.lane_id)
        why = f"superseded: its changes are already in {target}; nothing to merge"
        self.store.transition(record, "exited", why)
        raise NothingToMerge(f"nothing to merge: {self.lane_id}'s changes are already in {target} (another accept "
                             "merged the same change); nothing was merged",
                             f"abandon it: `lanes-tui abandon {self.lane_id}`")

    def _conflict(self, files: list[str]) -> AcceptOutcome:
        record = self.store.read(self.lane_id)
        packet = read_packet(self.lane) or {}
        packet["conflict_files"] = files
        write_packet(self.lane, packet)
        self.store.transition(record, "conflict", "rebase onto the target conflicts in " + ", ".join(files),
                              files=files)
        self.journal_path.unlink()
        return AcceptOutcome(self.lane_id, "conflict", f"accept {self.lane_id} stopped: rebase conflicts in "
                             + ", ".join(files) + "; nothing was merged", conflict_files=tuple(files))

    def _cleanup(self, merged_sha: str, override: str | None, override_review: str | None = None) -> None:
        remove_lane_worktree(self.location())  # the lane's own root: a changed config cannot wedge it
        record = self.store.read(self.lane_id)
        crash_point("cleanup:after")
        packet = read_packet(self.lane) or {}
        packet["accepted_sha"] = merged_sha
        packet["accepted_at"] = self.clock.time()
        journal = self.read_journal()
        no_verify = journal.no_verify if journal is not None else None
        if no_verify:  # the lead skipped the repository's hooks: their reason stays with the accept
            packet["no_verify"] = no_verify
        if override:
            packet["override"] = override
            outside = list(journal.outside_scope) if journal is not None else None
            if outside:
                packet["override_outside_scope"] = outside
        if override_review:  # the lead accepted over a BLOCKING or stale review: the reason and what it lifted
            packet["override_review"] = {"reason": override_review,
                                         "refusals": list(journal.review_refusals) if journal is not None else []}
        write_packet(self.lane, packet)
        self.store.transition(record, "accepted", f"merged into {record.target_branch} at {merged_sha[:10]}",
                              sha=merged_sha, **({"override": override} if override else {}),
                              **({"override_review": override_review} if override_review else {}),
                              **({"no_verify": no_verify} if no_verify else {}))
        with contextlib.suppress(FileNotFoundError):
            self.journal_path.unlink()


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:72]
    return "work of the lane"


def recover_interrupted_accepts(repo: Path) -> list[str]:
    """Finish or roll back half-done accepts, unless an accept is running right now (it holds the lock)."""
    paths = StatePaths(repo)
    if not any(paths.lanes.glob("*/accept.json")):
        return []
    lock = slots.try_acquire(paths.locks / "accept", 1, {"lane": "(recovery)"})
    if lock is None:
        return []
    with lock:
        return finish_interrupted_accepts(repo, load_config(repo))


def finish_interrupted_accepts(repo: Path, config: Config) -> list[str]:
    """Finish or roll back every accept a killed process left half-done; returns what it did.

    A journal that cannot be resolved is marked stuck (shown by `status` and `doctor`) and skipped:
    it never stops the other lanes' journals, nor the command that reconciles.
    """
    paths = StatePaths(repo)
    done = []
    for lane_id in paths.lane_ids():
        accept = Accept(repo, config, lane_id)
        raw = raw_journal(accept.lane)
        if raw is None:
            continue
        try:
            journal = AcceptJournal.from_json(raw, where=str(accept.journal_path))
            done.append(f"{lane_id}: {_resolve(accept, journal)}")
        except Exception as exc:  # any failure: this journal waits for the lead, the others go on
            log.info("interrupted accept of %s cannot be finished: %s", lane_id, exc)
            mark_stuck(accept.lane, raw, exc)  # `status` and `doctor` show it (`stuck_accepts`)
    return done


def _resolve(accept: Accept, journal: AcceptJournal) -> str:
    store, lane_id = accept.store, accept.lane_id
    record = store.read(lane_id)
    if record.runner != "local":  # no worktree here: finished or rolled back from git alone
        return resolve_remote(accept, journal)
    location = accept.location()  # refuses (the journal stays, marked stuck) when lane.json disagrees
    target = journal.target if journal.target is not None else record.target_branch
    proc = run_git(accept.repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{target}", check=False)
    if proc.returncode != 0:
        raise LanesError(f"the target branch {target!r} of the interrupted accept does not exist any more",
                         f"recreate it at the commit it had (`git branch {target} SHA`, see `git reflog`)")
    target_sha = os.fsdecode(proc.stdout).strip()
    worktree = location.worktree
    merged = journal.merged
    if journal.step in ("merge", "cleanup") and merged and is_ancestor(accept.repo, merged, target_sha):
        accept._cleanup(merged, journal.override, journal.override_review)
        return "the merge had happened: accept finished"
    if git_witness(location) is not None and worktree.is_dir():  # only git's own worktree of the lane is reset
        if (worktree / ".git").exists() and rebase_in_progress(worktree):
            run_git(worktree, "rebase", "--abort", check=False)
        before = journal.lane_head
        if journal.step == "rebase" and before and git_out(worktree, "rev-parse", "HEAD") != before:
            run_git(worktree, "reset", "-q", "--hard", before)
            record.base_sha = journal.base_sha_before if journal.base_sha_before is not None else record.base_sha
    state_before = journal.state_before if journal.state_before is not None else "ready"
    store.transition(record, state_before, "an interrupted accept was rolled back; nothing was merged")
    accept.journal_path.unlink()
    return f"rolled back to {state_before}"
