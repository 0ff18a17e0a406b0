"""The review run: a model of another family reads the lane's diff and says CLEAN or BLOCKING.

Run by the supervisor right after the gates pass (with `[review]` on), and by the lead's `lanes-tui
review ID`. The steps: choose the reviewer (`review.verdict.choose_reviewer`); take the lane's scoped
diff and its digest (`lane_diff`); wait for one of the machine's `[review] slots` (the lane shows
`reviewing`); snapshot the lane's work into a detached, read-only worktree (`git.review_tree`); run
the reviewer there as a supervised process (`AgentRun`: its watchdog, its wall-clock limit
`[review] timeout_s`, its meters counted to the lane); read the verdict; remove the worktree.

Nothing the reviewer does can make a lane CLEAN by accident: a run that fails, times out or prints no
verdict is MISSING, and so is a review during which the lane's digest moved (someone wrote to the
lane while it was read). The verdict, the reviewer, the digest of the diff it read and its findings
go into the packet's `review_detail`; the lane ends `ready` (CLEAN or MISSING) or `rejected`
(BLOCKING). A lane whose gates did not pass keeps its state: a review never makes it ready.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from pathlib import Path
from typing import Any

from lanes_tui.engine.channels import ChannelContext, make_channel
from lanes_tui.engine.config.families import model_family, provider_family
from lanes_tui.engine.config.providers import ProviderConfig
from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core import slots
from lanes_tui.engine.core.atomic import private_opener
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.lane_diff import lane_diff, work_digest
from lanes_tui.engine.decisions.packet import read_packet, write_packet
from lanes_tui.engine.decisions.results import ReviewVerdict
from lanes_tui.engine.decisions.review.prompt import (
    detail_from_verdict,
    read_only_argv,
    review_prompt,
    reviewer_text,
)
from lanes_tui.engine.decisions.review.verdict import TAIL_LINES, Verdict, choose_reviewer, parse_verdict
from lanes_tui.engine.git.lane_paths import locate_lane, working_tree
from lanes_tui.engine.git.review_tree import add_review_tree, remove_review_tree, snapshot_commit
from lanes_tui.engine.lanes.agent_run import AgentRun, RunOutcome, RunSettings
from lanes_tui.engine.lanes.caps import lane_caps
from lanes_tui.engine.lanes.classify import Classification, PatternScanner
from lanes_tui.engine.lanes.confine import confine, provider_writable
from lanes_tui.engine.lanes.env import ensure_cli_shim, lane_environment
from lanes_tui.engine.procs.process import ProcessRequest
from lanes_tui.engine.state.meters import METERS_FILE, RunMeter
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths, runtime_dir
from lanes_tui.engine.state.store import LaneStore, lane_operation

__all__ = ["REVIEW_OUTPUT", "review_by_lead", "review_lane", "review_slot_dir", "writer_families"]

log = logging.getLogger(__name__)

#: The reviewer's raw output, in the lane's folder (0600), rewritten by each review.
REVIEW_OUTPUT = "review-output.log"
#: How often a review waiting for a slot looks again.
SLOT_POLL_S = 0.25


def review_slot_dir() -> Path:
    """The machine-wide review slots: `[review] slots` reviews at once across repositories."""
    return runtime_dir() / "review-slots"


def writer_families(config: Config, record: LaneRecord) -> set[str]:
    """The families of every provider that ran in the lane (an unknown one is a family of its own): the
    model each attempt ran (aider's is the one it read itself) decides when the provider sets no family."""
    families = set()
    for attempt in record.providers_tried:
        provider = config.providers.get(attempt.provider)
        if provider is None:
            families.add(attempt.provider)
        elif not provider.family and attempt.model:
            families.add(model_family(attempt.model) or provider_family(provider))
        else:
            families.add(provider_family(provider))
    return families


def review_follows(config: Config, record: LaneRecord) -> bool:
    """Will the supervisor's `review_lane` review this lane (a verdict, MISSING included), not skip it?"""
    review = config.review
    name, _why = choose_reviewer(review, config.providers, writer_families(config, record), record.task_type,
                                 record.tier)
    return name is not None or review.applies(record.task_type, record.tier)


async def review_lane(repo: Path, config: Config, store: LaneStore, record: LaneRecord, *, by_lead: bool,
                      clock: Clock | None = None, stop: asyncio.Event | None = None) -> dict[str, Any] | None:
    """Review the lane and record the verdict; returns the packet's new `review_detail`.

    None (and nothing changed) when the supervisor asks and `[review]` does not apply to this lane; the
    lead's `review ID` reviews whatever the mode. No reviewer of another family, a diff over
    `max_diff_kb`, a failed or silent reviewer: the review is MISSING with the reason.
    """
    clock = clock or RealClock()
    review = config.review
    if by_lead and review.mode == "off":
        review = dataclasses.replace(review, mode="cross-all")  # the lead asked for this review
    name, why = choose_reviewer(review, config.providers, writer_families(config, record), record.task_type,
                                record.tier)
    if name is None and not by_lead and not review.applies(record.task_type, record.tier):
        return None  # review off for this lane: the packet keeps `review: MISSING` and no detail
    location = locate_lane(repo, record.id, record, default_root=config.lanes.worktree_root)
    worktree = working_tree(location)
    before_state, before_reason = record.state, record.state_reason
    frozen = _frozen(store, record.id)  # the work frozen before the gates: what is reviewed and merged
    if name is None:
        return _decide(store, record, Verdict("MISSING", reason=why), None,
                       work_digest(worktree, record.base_sha, frozen), clock, before_state, before_reason)
    provider = config.provider(name)
    diff = await asyncio.to_thread(lane_diff, repo, config, record.id, max_bytes=review.max_diff_kb * 1024,
                                   frozen=frozen)
    if diff.cut:
        size = sum(len(f.diff.encode()) for f in diff.files) // 1024
        verdict = Verdict("MISSING", reason=f"the diff is over [review] max_diff_kb = {review.max_diff_kb} "
                          f"(at least {size} KiB): review it by hand, or raise max_diff_kb")
        return _decide(store, record, verdict, provider, diff.digest, clock, before_state, before_reason)
    slot = await _take_slot(store, record, review.slots, stop)
    if slot is None:
        store.transition(record, before_state, before_reason)
        return None
    with slot:
        store.transition(record, "reviewing", f"{name} ({provider_family(provider)}) reviews the diff",
                         reviewer=name)
        packet = read_packet(store.lane_paths(record.id)) or {}
        prompt = review_prompt(record.id, record.prompt, packet.get("gates", []), diff.text(), diff.notes)
        started = clock.time()
        tree = await asyncio.to_thread(_make_tree, repo, location.root, record.id, worktree, frozen)
        try:
            outcome, raw = await _run_reviewer(repo, config, store, record, provider, tree, prompt, stop, clock,
                                               review.timeout_s)
        finally:
            await asyncio.to_thread(remove_review_tree, repo, location.root, record.id)
        after = await asyncio.to_thread(work_digest, worktree, record.base_sha, _frozen(store, record.id))
    verdict = _verdict(outcome, raw, review.timeout_s)
    if after != diff.digest:
        verdict = Verdict("MISSING", reason="the lane changed while it was reviewed; `lanes-tui review "
                          f"{record.id}` reviews it again", tail=verdict.tail)
    detail = detail_from_verdict(verdict, reviewer=name, family=provider_family(provider), diff_digest=diff.digest,
                                 started=started, ended=clock.time())
    return _record(store, record, detail, before_state, before_reason)


def _make_tree(repo: Path, root: Path, lane_id: str, worktree: Path, frozen: str | None) -> Path:
    """The reviewer's read-only copy: the frozen work when there is one, else a snapshot of the worktree."""
    return add_review_tree(repo, root, lane_id, frozen or snapshot_commit(worktree, lane_id))


def _frozen(store: LaneStore, lane_id: str) -> str | None:
    """The packet's `frozen_sha` (`git.frozen_work`), or None for a packet without one."""
    frozen = (read_packet(store.lane_paths(lane_id)) or {}).get("frozen_sha")
    return frozen if isinstance(frozen, str) and frozen else None


async def _take_slot(store: LaneStore, record: LaneRecord, count: int, stop: asyncio.Event | None) -> slots.Slot | None:
    """One of the machine's review slots; the lane shows `reviewing` with the wait while it waits."""
    holder = {"lane": record.id, "repo": str(store.paths.repo), "what": "review"}
    folder = review_slot_dir()
    slot = slots.try_acquire(folder, count, holder)
    if slot is not None:
        return slot
    store.transition(record, "reviewing", f"waiting for one of [review] slots={count} review slots")
    return await slots.acquire_unless(folder, count, holder, stop, poll_s=SLOT_POLL_S)


async def _run_reviewer(repo: Path, config: Config, store: LaneStore, record: LaneRecord, provider: ProviderConfig,
                        tree: Path, prompt: str, stop: asyncio.Event | None, clock: Clock,
                        timeout_s: float) -> tuple[RunOutcome, str]:
    """The reviewer as the supervisor runs an agent: own session, watchdog, limit, meters to the lane."""
    paths = StatePaths(repo)
    lane = paths.lane(record.id)
    # measures_context=False: the reviewer's context is not the lane agent's, whose meter stays shown.
    meter = RunMeter(lane.dir / METERS_FILE, clock, provider=provider.name, model=provider.model,
                     measures_context=False)
    channel = make_channel(ChannelContext(lane=record.id, attempt=record.attempt, provider=provider, inbox=None,
                                          meters=meter, clock=clock))
    env = lane_environment(os.environ, lane_id=record.id, attempt=record.attempt, state_dir=paths.state,
                           worktree=tree, bin_dir=ensure_cli_shim(paths.bin).parent, allow=provider.env)
    env["LANES_REVIEW"] = "1"  # a reviewer is not the lane's agent: `lanes-tui ask` from it has no lane to hold
    argv = read_only_argv(channel.render_argv(prompt, tree))
    try:  # the reviewer runs under the kernel's fence as the lane's agent does, on its snapshot tree
        fence = confine(repo, record.id, tree, kind="review", writable=provider_writable(provider.writable, env),
                        allowed_uncontained=lane_caps(config.lanes, record.caps).allow_uncontained)
    except LanesError as exc:
        now = clock.time()
        return RunOutcome(Classification("CONFIG-ERROR", f"the reviewer was not started: {exc}"), None, now, now), ""
    env.update(fence.env())
    request = ProcessRequest(argv, tree, env, stdin_pipe=channel.stdin_pipe, name=f"{record.id}:review:{provider.name}",
                             preexec=fence.preexec())
    settings = RunSettings(timeout_s, max(config.lanes.idle_timeout_s, timeout_s), config.lanes.sample_s)
    output_path = lane.dir / REVIEW_OUTPUT
    with open(output_path, "wb", opener=private_opener) as output:
        run = AgentRun(request, stdin_data=channel.stdin_payload(prompt), keep_stdin_open=False, output=output,
                       samples_path=lane.samples, scanner=PatternScanner.from_patterns(provider.budget_patterns,
                                                                                     provider.config_patterns),
                       settings=settings, clock=clock, files_changed=lambda: False, is_waiting=lambda: False,
                       on_waiting=lambda _waiting: None, channel=channel)
        watch = asyncio.create_task(_forward_stop(stop, run)) if stop is not None else None
        try:
            outcome = await run.run()
        finally:
            if watch is not None:
                watch.cancel()
            fence.close()
            meter.flush()  # the reviewer's tokens and cost are the lane's
    store.event(record.id, "review-exit", provider=provider.name, result=outcome.classification.result,
                returncode=outcome.returncode, reason=outcome.classification.reason)
    raw = output_path.read_bytes().decode("utf-8", "replace")
    return outcome, raw


async def _forward_stop(stop: asyncio.Event, run: AgentRun) -> None:
    await stop.wait()
    run.stop_requested.set()


def _verdict(outcome: RunOutcome, raw: str, timeout_s: float) -> Verdict:
    """The parsed verdict of a reviewer that finished; MISSING with its tail for one that did not."""
    text = reviewer_text(raw)
    parsed = parse_verdict(text)
    if outcome.classification.result == "OK":
        return parsed
    tail = parsed.tail or "\n".join(text.splitlines()[-TAIL_LINES:])
    return Verdict("MISSING", reason=f"the reviewer did not finish: {outcome.classification.reason}", tail=tail)


def _decide(store: LaneStore, record: LaneRecord, verdict: Verdict, provider: ProviderConfig | None, digest: str,
            clock: Clock, before_state: str, before_reason: str) -> dict[str, Any]:
    """A review decided without running one (no reviewer, diff too large)."""
    now = clock.time()
    detail = detail_from_verdict(verdict, reviewer=provider.name if provider else None,
                                 family=provider_family(provider) if provider else None, diff_digest=digest,
                                 started=now, ended=now)
    return _record(store, record, detail, before_state, before_reason)


def _record(store: LaneStore, record: LaneRecord, detail: dict[str, Any], before_state: str,
            before_reason: str) -> dict[str, Any]:
    """Verdict into the packet, the record and the events; the lane's state after the review."""
    lane = store.lane_paths(record.id)
    packet = read_packet(lane) or {}
    packet["review"] = detail["verdict"]
    packet["review_detail"] = detail
    write_packet(lane, packet)
    record.review = detail["verdict"]
    gates_ok = packet.get("gates_status") in ("passed", "none")
    state, reason = _state_after(detail, gates_ok, before_state, before_reason)
    store.event(record.id, "review", verdict=detail["verdict"], reviewer=detail["reviewer"],
                findings=len(detail["findings"]), reason=detail["reason"], diff_digest=detail["diff_digest"])
    store.transition(record, state, reason, review=detail["verdict"])
    return detail


def _state_after(detail: dict[str, Any], gates_ok: bool, before_state: str, before_reason: str) -> tuple[str, str]:
    verdict, reviewer = detail["verdict"], detail["reviewer"] or "no reviewer"
    findings = detail["findings"]
    if verdict == "BLOCKING":
        first = f" (first: {findings[0]['path']}: {findings[0]['text'][:80]})" if findings else ""
        return "rejected", f"review BLOCKING by {reviewer}: {len(findings)} finding(s){first}"
    if not gates_ok or before_state not in ("ready", "rejected", "reviewing"):
        return before_state, before_reason  # a review never makes a lane ready whose gates did not pass
    if verdict == "CLEAN":
        return "ready", f"gates passed; review CLEAN by {reviewer}"
    return "ready", f"gates passed; review MISSING: {detail['reason']}"


async def review_by_lead(repo: Path, config: Config, lane_id: str, *, clock: Clock | None = None) -> ReviewVerdict:
    """`lanes-tui review ID`: review (again) a lane nobody runs, under the lane's operation lock."""
    with lane_operation(StatePaths(repo), lane_id, "review"):
        store = LaneStore(StatePaths(repo), clock)
        record = store.read(lane_id)
        _ensure_reviewable(record)
        detail = await review_lane(repo, config, store, record, by_lead=True, clock=clock)
        if detail is None:  # only when stopped while waiting for a slot
            raise LanesError(f"the review of {lane_id} was stopped before it ran")
        return ReviewVerdict.from_json(detail, lane=lane_id)


def _ensure_reviewable(record: LaneRecord) -> None:
    """The lead's `review ID` refuses a lane that is running or already decided."""
    if record.state in ("accepted", "abandoned"):
        raise LanesError(f"lane {record.id} is {record.state}; there is nothing left to review")
    if record.state in ("queued", "launching", "running", "waiting", "checking", "reviewing"):
        raise LanesError(f"lane {record.id} is still {record.state}",
                         f"wait for it (`lanes-tui wait {record.id}`) and review it then")
