"""Recover a lost, stalled, rejected, conflicting or failed lane into a known state.

First no process of the lane may be left (leftovers are stopped and reported); then the lead picks:
`recheck` runs the gates on the worktree as it is, `relaunch` starts the next attempt from the
current target with the findings (gate tails, stall report, conflict files, and the lead's own
notes, `--note`) in its prompt.

A task started by hand gets `[lanes] attempts` attempts (default 3): `relaunch` refuses the next one
with the takeover fix, as a plan's ticket goes to `takeover` when its attempts are used. A plan's lane
is not counted here: the plan counts its ticket (`plans.decide`), and its scheduler relaunches it
itself (`plans.scheduler.launch_ticket`), so the lead's `recover --relaunch` of it is the plan's own
takeover path. A best-of member is a task of its own (`<slug>-b<i>`), counted by its own attempts.

A lane that ran on a cluster node (`record.runner != "local"`) has no process and no worktree here:
nothing local is stopped or located; `recheck` runs its gates on the node (`Runner.run_gates`) and
`relaunch` asks its runner for the next attempt on another node, from the last checkpoint the lost
node pushed (`RemoteRunner.relaunch`). An `unreachable` lane is not recovered: its node may answer
again, and a relaunch then would run two agents on one task.

An accepted lane is not recovered, but it may be relaunched as a follow-up: a CI check of the pull
request carrying its work failed (`lanes-tui ci` writes the failed logs as findings and prints
`recover ID --relaunch --note-file F`). The next attempt starts from the target, which holds the
merged work, in a fresh session (the accepted lane's worktree is gone).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import lane_id_for
from lanes_tui.engine.decisions.check import check_lane
from lanes_tui.engine.decisions.lead_note import EVENT_NOTE_CHARS, check_note, read_note_file
from lanes_tui.engine.decisions.packet import read_packet
from lanes_tui.engine.decisions.reconcile import reconcile_lane
from lanes_tui.engine.decisions.results import Packet
from lanes_tui.engine.decisions.review.prompt import describe_review, review_detail, review_prompt_block
from lanes_tui.engine.decisions.runners import remote_runner
from lanes_tui.engine.git.lane_paths import git_witness, locate_lane
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane, leftover_processes, stop_lane, supervisor_alive
from lanes_tui.engine.lanes.parking import BACKOFF_MARK, PARKED_PREFIX, RESUME_NOW
from lanes_tui.engine.state.comments import HunkComment, drop_comments, read_comments
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore, lane_operation

RECOVERABLE = frozenset({"lost", "stalled", "rejected", "conflict", "exited"})


@dataclass
class Findings:
    """What recover found, for the lead to read before choosing."""

    lane_id: str
    state: str
    reason: str
    result: str | None
    stopped_pids: list[int] = field(default_factory=list)
    leftover_pids: list[int] = field(default_factory=list)
    stall: dict[str, Any] | None = None
    failed_gates: list[dict[str, Any]] = field(default_factory=list)
    conflict_files: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    #: Where lane.json disagrees with the lane's derived worktree and branch (`git.lane_paths`):
    #: `recheck` refuses until it is restored; `relaunch` makes a fresh lane and is not affected.
    problems: list[str] = field(default_factory=list)
    #: The cap that stopped the lane (`lanes.governor`: cap, value, peak, mechanism, killed), if one did.
    fired: dict[str, str] | None = None
    #: The packet's review (`review.prompt.review_detail`): a BLOCKING one's findings go into the relaunch.
    review: dict[str, Any] | None = None
    #: (what, fix) when `relaunch` would refuse: the task used its `[lanes] attempts`. None otherwise.
    relaunch_refused: tuple[str, str] | None = None
    #: The lead's comments on hunks of the lane's diff, kept since it ended (`state.comments`): the
    #: relaunch carries them in its prompt, then drops them.
    comments: list[HunkComment] = field(default_factory=list)

    def describe(self) -> list[str]:
        lines = [f"{self.lane_id}: {self.state} ({self.reason}); result {self.result or '-'}"]
        lines.extend(f"PROBLEM: {p}" for p in self.problems)
        if self.stopped_pids:
            lines.append(f"stopped leftover processes: {' '.join(map(str, self.stopped_pids))}")
        if self.leftover_pids:
            lines.append(f"leftover processes (stopped when you choose): {' '.join(map(str, self.leftover_pids))}")
        if self.stall:
            lines.append(f"stalled after {self.stall.get('idle_s')}s idle; tree: "
                         + ", ".join(f"{p.get('pid')} {p.get('name')}" for p in self.stall.get("tree", [])))
        for gate in self.failed_gates:
            lines.append(f"gate {gate['command']!r} {gate['status']} (exit {gate.get('exit_code')})")
        if self.conflict_files:
            lines.append("conflicts in: " + ", ".join(self.conflict_files))
        if self.review is not None and self.review.get("verdict") == "BLOCKING":
            lines.extend(describe_review(self.review))
        lines.extend(f"your answer: {a}" for a in self.answers)
        lines.extend(f"your comment on {c.where}: {c.text}" for c in self.comments)
        if self.fired:
            lines.append(f"cap: {self.fired.get('reason', self.fired.get('cap'))}")
        lines.append("recheck: run the gates again on the worktree as it is (ready if they pass)")
        if self.relaunch_refused:
            lines.append(f"relaunch: refused, {self.relaunch_refused[0]} — {self.relaunch_refused[1]}")
        else:
            lines.append("relaunch: start the next attempt from the current target with these findings in its prompt")
        return lines

    def prompt_block(self, attempt: int, note: str | None = None) -> str:
        """The findings as text for the next attempt's prompt; each line quoted so no agent runs it.

        `note` is the lead's own (`--note`), last: split as the sim splits (`str.splitlines`), so no
        line of it escapes its quote."""
        body = [f"Attempt {attempt} ended {self.state} ({self.reason})."]
        if self.stall:
            body.append(f"Stall report: idle {self.stall.get('idle_s')}s; processes: "
                        + json.dumps(self.stall.get("tree", []))[:1500])
        for gate in self.failed_gates:
            body.append(f"Gate {gate['command']!r} {gate['status']}; output tail:")
            body.extend(str(gate.get("output_tail", ""))[-1500:].splitlines())
        if self.conflict_files:
            body.append("Rebasing onto the target conflicted in: " + ", ".join(self.conflict_files))
        body.extend(f"The lead answered: {a}" for a in self.answers)
        if self.fired:
            body.append(resource_advice(self.fired))
        blocking = review_prompt_block(self.review)
        if blocking:
            body.extend(blocking.splitlines())
        if self.comments:
            body.append("The lead's comments on your diff:")
            for comment in self.comments:
                body.extend(comment.finding_lines())
        if note:
            body.append("The lead's notes:")
            body.extend(note.splitlines())
        return f"\n\n## Findings from attempt {attempt}\n" + "\n".join("> " + line for line in body) + "\n"


async def inspect_lane(repo: Path, config: Config, lane_id: str, *, clock: Clock | None = None,
                       stop_leftovers: bool = True, follow_up: bool = False) -> Findings:
    """Reconcile and collect the findings; refuses lanes that need no recovery or still run.

    With `stop_leftovers` (the command line, and every choice) processes still carrying the lane's
    environment are stopped first; the dashboard looks without stopping, then stops on the choice.
    """
    with lane_operation(StatePaths(repo), lane_id, "recover"):
        return await _inspect(repo, config, lane_id, clock, stop_leftovers, follow_up)


async def _inspect(repo: Path, config: Config, lane_id: str, clock: Clock | None, stop_leftovers: bool,
                   follow_up: bool = False) -> Findings:
    store = LaneStore(StatePaths(repo), clock)
    record = store.read(lane_id)
    if supervisor_alive(repo, lane_id):
        raise LanesError(f"lane {lane_id} is {record.state} and its supervisor is still at work",
                         f"stop it first (`k` in the dashboard), or wait: `lanes-tui wait {lane_id}`")
    reconcile_lane(repo, store, record, lock_held=True)  # we hold the lane: settle it, do not skip it
    record = store.read(lane_id)
    local = record.runner == "local"
    if record.state == "unreachable":
        raise LanesError(f"lane {lane_id} is unreachable: {record.state_reason}",
                         f"wait: it is lost once its node is confirmed gone (then `lanes-tui recover {lane_id} "
                         "--relaunch`), or it comes back by itself; `lanes-tui wait " + lane_id + "` waits")
    packet = read_packet(store.lane_paths(lane_id)) or {}
    hook = packet.get("hook_failure")  # a ready lane whose accept a commit hook refused (`commit_hooks`)
    hook = hook if record.state == "ready" and isinstance(hook, dict) and isinstance(hook.get("command"), str) else None
    # An accepted lane is relaunched only as a follow-up (`relaunch`): its work is merged, and a failed CI
    # check of the pull request carrying it (`lanes-tui ci`) is findings for a next attempt from the target.
    follow = follow_up and record.state == "accepted"
    # A ready lane the lead commented on (`decisions.comment`) is relaunched with the comments.
    comments = read_comments(store.lane_paths(lane_id).dir) if local else []
    reviewed = record.state == "ready" and bool(comments)
    if record.state not in RECOVERABLE and hook is None and not follow and not reviewed:
        raise LanesError(f"lane {lane_id} is {record.state}; there is nothing to recover")
    if stop_leftovers and local:  # a remote lane has no process on this machine
        stopped = await stop_lane(repo, lane_id)
    else:
        stopped = []
    left = [] if stop_leftovers or not local else [k.pid for k in leftover_processes(repo, lane_id)]
    return Findings(
        lane_id=lane_id, state=record.state, reason=record.state_reason, result=record.result,
        stopped_pids=stopped, leftover_pids=left, stall=record.stall,
        failed_gates=[g for g in packet.get("gates", []) if g.get("status") in ("failed", "timeout")]
        + ([hook] if hook is not None else []),
        conflict_files=list(packet.get("conflict_files", [])),
        answers=_orphan_answers(repo, lane_id),
        problems=_location_problems(repo, config, lane_id, record) if local else [],
        fired=_fired(record),
        review=review_detail(packet),
        relaunch_refused=attempts_refusal(StatePaths(repo), config, record),
        comments=comments,
    )


def attempts_refusal(paths: StatePaths, config: Config, record: LaneRecord) -> tuple[str, str] | None:
    """(what, fix) when the task of a lane started by hand has used its `[lanes] attempts`, else None.

    The task's attempts are its highest `-aN`, whichever of its lanes is recovered; the cap is the
    config's now, so raising it is the fix. Plan lanes are the plan's to count (module docstring).
    """
    if record.plan is not None:
        return None
    cap, used = config.lanes.attempts, max(record.attempt, _highest_attempt(paths, record.slug))
    if used < cap:
        return None
    newest = lane_id_for(record.slug, used)
    what = (f"{record.id} is attempt {used} of {cap} ([lanes] attempts)" if newest == record.id else
            f"task {record.slug} is at attempt {used} of {cap} ([lanes] attempts; its newest lane is {newest})")
    where = f" ({record.worktree})" if newest == record.id and record.runner == "local" else ""
    fix = (f"take it over: finish the work in its worktree{where} yourself, then `lanes-tui check {newest}` and "
           f"`lanes-tui accept {newest}` (or `lanes-tui abandon {newest}`); or raise [lanes] attempts in "
           ".lanes/config.toml")
    return what, fix


def wake_parked(repo: Path, lane_id: str) -> bool:
    """`recover` on a parked lane (quota parking, `supervisor.budget`) or one backing off before a retry
    (`supervisor.retry`): ask its supervisor to resume now.

    False when the lane is not parked (then recover goes on as usual). The request is a file in the
    lane's own state folder, derived from its id; the supervisor removes it when it wakes.
    """
    paths = StatePaths(repo)
    record = LaneStore(paths).read(lane_id)
    reason = record.state_reason
    if record.state != "waiting" or not (reason.startswith(PARKED_PREFIX) or BACKOFF_MARK in reason):
        return False
    if not supervisor_alive(repo, lane_id):
        return False
    (paths.lane(lane_id).dir / RESUME_NOW).touch()
    return True


def _fired(record: LaneRecord) -> dict[str, str] | None:
    """The cap that fired, from a record anyone may have edited: string values of known keys only."""
    fired = (record.governor or {}).get("fired")
    if not isinstance(fired, dict):
        return None
    keys = ("cap", "value", "peak", "mechanism", "killed", "reason")
    return {k: fired[k] for k in keys if isinstance(fired.get(k), str)} or None


def resource_advice(fired: dict[str, str]) -> str:
    """What the next attempt should do differently after a cap stopped the last one."""
    cap, value, peak = fired.get("cap", "?"), fired.get("value", "?"), fired.get("peak", "?")
    advice = {
        "memory": "use less memory: run the tests with fewer workers (e.g. `pytest -n 2`) and one suite at a "
                  "time through `lanes-tui lock --`, and do not load whole large files into memory",
        "pids": "start fewer processes at once: fewer test workers or build jobs (`make -j2`), and no "
                "unbounded process spawning",
    }.get(cap, "stay within the lane's caps")
    return f"You were stopped at the {cap} cap of {value} (peak {peak}); {advice}."


def _location_problems(repo: Path, config: Config, lane_id: str, record: LaneRecord) -> list[str]:
    try:
        git_witness(locate_lane(repo, lane_id, record, default_root=config.lanes.worktree_root))
    except LanesError as exc:
        return [str(exc)]
    return []


async def recheck(repo: Path, config: Config, lane_id: str, *, clock: Clock | None = None) -> Packet:
    """`recover --recheck`: the findings, then the gates where the worktree is; the new packet, typed."""
    await inspect_lane(repo, config, lane_id, clock=clock)
    record = LaneStore(StatePaths(repo), clock).read(lane_id)
    if record.runner != "local":  # the worktree is on the node: the gates run there
        runner = remote_runner(repo, config, record)
        packet = await runner.run_gates(lane_id)
        await runner.sync()  # the node's packet and state reach the mirror before the lead reads them
        return Packet.from_json(packet, lane=lane_id)
    return Packet.from_json(await check_lane(repo, config, lane_id, clock=clock), lane=lane_id)


async def relaunch(repo: Path, config: Config, lane_id: str, *, clock: Clock | None = None,
                   fresh: bool = False, note: str | None = None, note_file: Path | None = None) -> LaneRecord:
    """The next attempt, with the findings and the lead's `note` (or `note_file`'s text); it resumes the
    provider's session unless `fresh` (`--fresh`). Refused when the task used its `[lanes] attempts`
    (`attempts_refusal`), before anything is started."""
    if note is not None and note_file is not None:
        raise LanesError("--note and --note-file do not go together", "give your notes one way")
    note = read_note_file(note_file) if note_file is not None else None if note is None else check_note(note)
    store = LaneStore(StatePaths(repo), clock)
    if note is not None and store.read(lane_id).runner != "local":
        raise LanesError(f"lane {lane_id} ran on a cluster node: its relaunch cannot carry a note yet",
                         f"relaunch it without one (`lanes-tui recover {lane_id} --relaunch`), or start a new "
                         "lane with your notes in its prompt")
    findings = await inspect_lane(repo, config, lane_id, clock=clock, follow_up=True)
    if findings.relaunch_refused:
        raise LanesError(*findings.relaunch_refused)
    old = store.read(lane_id)
    if old.runner != "local":
        return await _relaunch_remote(repo, config, store, old, fresh=fresh)
    attempt = next_attempt(StatePaths(repo), old.slug)
    prompt = _original_prompt(old.prompt) + findings.prompt_block(old.attempt, note)
    request = LaunchRequest(prompt=prompt, task_type=old.task_type, slug=old.slug, attempt=attempt,
                            lane=old.chain[0] if old.chain else None, allow_load=old.allow_load, raw=old.raw,
                            caps=dict(old.caps), scope=tuple(old.scope), plan=old.plan, ticket=old.ticket,
                            target=old.target_branch, model=old.model, tier=old.tier,
                            group=old.group,  # a best-of member's next attempt stays in its group
                            lead_note=note,  # an accepted lane's worktree is gone: its session is not resumed
                            **resume_fields(old, fresh=fresh or old.state == "accepted"))
    new = launch_lane(repo, config, request, clock=clock)
    old = store.read(lane_id)
    old.superseded_by = new.id
    store.write(old)
    noted = {"note": note[:EVENT_NOTE_CHARS], "note_cut": len(note) > EVENT_NOTE_CHARS} if note else {}
    if findings.comments:  # handed over: the new attempt's prompt holds them (a comment kept meanwhile stays)
        noted["comments"] = drop_comments(store.lane_paths(lane_id).dir, [c.id for c in findings.comments])
    store.event(lane_id, "relaunched", next=new.id, fresh=fresh, **noted)
    return new


async def _relaunch_remote(repo: Path, config: Config, store: LaneStore, old: LaneRecord, *,
                           fresh: bool) -> LaneRecord:
    """A remote lane's next attempt, on another node, from the last checkpoint its node pushed: the
    runner makes it (it knows the checkpoint); the old record names it, as a local relaunch does."""
    runner = remote_runner(repo, config, old)
    new = await runner.relaunch(old.id)
    old = store.read(old.id)
    if old.superseded_by != new.id:
        old.superseded_by = new.id
        store.write(old)
    store.event(old.id, "relaunched", next=new.id, fresh=fresh, runner=old.runner)
    return new


def resume_fields(old: LaneRecord, *, fresh: bool) -> dict[str, Any]:
    """The `resume_*` fields of the attempt after `old`: the last session one of its providers recorded,
    or its last provider with none (the supervisor then says why it starts fresh); none with `fresh`."""
    if fresh:
        return {"resume_from": old.id, "resume_fresh": True}
    with_session = [a for a in old.providers_tried if a.session_id]
    last = with_session[-1] if with_session else (old.providers_tried[-1] if old.providers_tried else None)
    return {"resume_from": old.id, "resume_provider": last.provider if last else None,
            "resume_session": last.session_id if last else None}


def next_attempt(paths: StatePaths, slug: str) -> int:
    attempt = _highest_attempt(paths, slug) + 1
    lane_id_for(slug, attempt)  # validates the length
    return attempt


def _highest_attempt(paths: StatePaths, slug: str) -> int:
    """The highest N of the lanes `<slug>-aN` in the state folder (0: none)."""
    pattern = re.compile(rf"^{re.escape(slug)}-a(\d+)$")
    return max((int(m.group(1)) for name in paths.lane_ids() if (m := pattern.match(name))), default=0)


def _original_prompt(prompt: str) -> str:
    """The task without findings of earlier attempts, so they do not pile up attempt after attempt."""
    cut = prompt.find("\n\n## Findings from attempt ")
    return prompt if cut < 0 else prompt[:cut]


def _orphan_answers(repo: Path, lane_id: str) -> list[str]:
    from lanes_tui.engine.inbox.store import InboxStore

    answers = []
    for view in InboxStore(StatePaths(repo).inbox).list(lane=lane_id, states={"orphaned"}):
        if view.answer is not None:
            answers.append(f"{view.question.title!r} → {view.answer}")
    return answers
