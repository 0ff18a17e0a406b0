"""The plan scheduler: one tick gathers the lanes from disk, decides (`plans.decide`), starts lanes.

`advance(repo, config, name)` is the tick the dashboard's engine and the plan supervisor both run; a
lock lets one of them tick a plan at a time (the other reads). Everything is rebuilt from disk each
tick — the frozen plan and memos (`plans.state`), the lane records of every repository the plan
runs in — so a restart of anything loses nothing.

A ticket's lane is launched like `lanes-tui run` would: `--id <ticket>` (so its lane is
`<ticket>-aN`), the ticket's type as the chain, its provider (or its tier's, from `[tiers]` of the
plan repository's config) first, its scope in the lane record (checked at accept), and its plan and
ticket named in the record. A ticket of another repository is launched there, with that
repository's config (its worktree root, chains, providers and gates), as its supervisor reads it.
A relaunch puts the findings of the lane before it in the prompt (`decisions.recover`) and resumes
that lane's provider session where the CLI can (`supervisor.resume`), as `recover --relaunch` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config, load_config
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.reconcile import reconcile
from lanes_tui.engine.decisions.recover import RECOVERABLE, inspect_lane, next_attempt, resume_fields
from lanes_tui.engine.decisions.runners import shared_runner
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane, supervisor_alive
from lanes_tui.engine.plans.decide import ACTIVE_STATES, Decision, LaneFact, Launch, decide, ticket_lanes
from lanes_tui.engine.plans.model import Ticket, TicketStatus
from lanes_tui.engine.plans.state import FrozenPlan, PlanRecord, PlanStore, plan_names
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore, lane_busy

__all__ = [
    "ACTIVE_STATES", "Decision", "LaneFact", "Launch", "advance", "decide", "gather", "launch_ticket",
    "open_plan_names", "plan_decision", "plan_statuses", "ticket_lanes",
]

log = logging.getLogger(__name__)

#: After a lane could not be started, the scheduler tries again after this long (each try counts).
RETRY_S = 30.0
DEFAULT_MAX_PARALLEL = 6


def lane_fact(repo: Path, record: LaneRecord) -> LaneFact:
    alive = record.state in ("exited", "stalled") and supervisor_alive(repo, record.id)
    return LaneFact(id=record.id, repo=repo, state=record.state, result=record.result, attempt=record.attempt,
                    scope=tuple(record.scope), plan=record.plan, ticket=record.ticket, created=record.created,
                    superseded_by=record.superseded_by, supervisor_alive=alive, reason=record.state_reason)


def plan_repos(frozen: FrozenPlan) -> list[Path]:
    """The plan's repository and every other one its tickets run in, each once."""
    return list(dict.fromkeys([frozen.repo, *(frozen.ticket_repo(t) for t in frozen.plan.tickets)]))


def gather(frozen: FrozenPlan, *, reconciled: bool = True) -> list[LaneFact]:
    """Every lane of every repository the plan runs in (a lane whose record is corrupt is left out).

    With `reconciled`, each repository is reconciled first, so a lane whose supervisor died is
    `lost` (and relaunched) even when no dashboard watches that repository.
    """
    facts: list[LaneFact] = []
    for repo in plan_repos(frozen):
        paths = StatePaths(repo)
        if not paths.lanes.is_dir():
            continue
        if reconciled:
            try:
                reconcile(repo)
            except Exception:  # never in the way of the plan: the next tick tries again
                log.exception("reconcile of %s failed", repo)
        records, _problems = LaneStore(paths).scan()
        facts.extend(lane_fact(repo, record) for record in records)
    return facts


def _max_parallel(repo: Path, config: Config | None) -> int:
    if config is not None:
        return config.lanes.max_parallel
    try:
        return load_config(repo).lanes.max_parallel
    except LanesError:
        return DEFAULT_MAX_PARALLEL


def plan_decision(repo: Path, name: str, *, config: Config | None = None, reconciled: bool = False,
                  clock: Clock | None = None) -> Decision:
    """Look at a plan without starting anything (`plan status`, the Plan pane)."""
    store = PlanStore(repo, name, clock)
    frozen = store.read_plan()
    record = store.read_record(frozen)
    facts = gather(frozen, reconciled=reconciled)
    return decide(frozen, record.state, record.tickets, facts, now=store.clock.time(),
                  max_parallel=_max_parallel(repo, config))


def open_plan_names(repo: Path) -> list[str]:
    """The launched plans of `repo` that are neither done nor cancelled."""
    return [name for name in plan_names(repo) if PlanStore(repo, name).state() == "open"]


def plan_statuses(repo: Path, name: str | None = None, *, reconciled: bool = False) -> list[TicketStatus]:
    """Every ticket of every open plan (or of the plan named, whatever its state), in plan order.

    A plan whose files cannot be read is skipped here (logged) unless it is the one named.
    """
    statuses: list[TicketStatus] = []
    for plan in [name] if name else open_plan_names(repo):
        try:
            statuses.extend(plan_decision(repo, plan, reconciled=reconciled).statuses)
        except LanesError:
            if name:
                raise
            log.exception("plan %s cannot be read", plan)
    return statuses


async def advance(repo: Path, config: Config, name: str, *, who: str = "scheduler",
                  clock: Clock | None = None) -> Decision:
    """One tick: start what can start, record why, and return every ticket's status.

    When another scheduler holds the plan (the dashboard and the plan supervisor both tick), this
    one only looks.
    """
    store = PlanStore(repo, name, clock)
    slot = store.try_tick_lock(who)
    if slot is None:
        return await asyncio.to_thread(plan_decision, repo, name, config=config, clock=clock)
    try:
        return await _tick(store, config, who)
    finally:
        slot.release()


async def _tick(store: PlanStore, config: Config, who: str) -> Decision:
    frozen = await asyncio.to_thread(store.read_plan)
    record = await asyncio.to_thread(store.read_record, frozen)
    before = record.to_json()
    facts = await asyncio.to_thread(gather, frozen)
    now = store.clock.time()
    decision = decide(frozen, record.state, record.tickets, facts, now=now, max_parallel=config.lanes.max_parallel)
    if record.state != "open":
        return decision
    _log_changes(store, record, decision.statuses, who)  # what the lead did since (accepted) comes first
    started: list[str] = []
    for launch in decision.launches:
        memo = record.memo(launch.ticket, frozen.frozen_at)
        try:
            lane = await launch_ticket(frozen, launch, config=config, clock=store.clock)
        except LanesError as exc:
            memo.launch_errors += 1
            memo.last_error, memo.retry_at = str(exc)[:500], now + RETRY_S
            store.log(who, "launch-failed", str(exc), ticket=launch.ticket, after=launch.after)
            log.warning("plan %s: ticket %s could not start: %s", frozen.name, launch.ticket, exc)
            continue
        if lane is None:  # its last lane is busy (the lead is recovering it): the next tick looks again
            continue
        memo.last_error, memo.retry_at = "", 0.0
        store.log(who, "relaunch" if launch.after else "start", launch.why, ticket=launch.ticket, lane=lane.id,
                  after=launch.after)
        facts.append(lane_fact(frozen.ticket_repo(frozen.plan.ticket(launch.ticket)), lane))
        started.append(lane.id)
    if decision.launches:  # the statuses as they are now, with the new lanes (nothing more is started)
        decision = replace(decide(frozen, record.state, record.tickets, facts, now=now,
                                  max_parallel=config.lanes.max_parallel),
                           launches=decision.launches, started=tuple(started))
    _log_changes(store, record, decision.statuses, who)
    if decision.done:
        record.state = "done"
        store.log(who, "done", "every ticket is accepted")
    if record.to_json() != before:
        await asyncio.to_thread(store.write_record, record)
    return decision


def _log_changes(store: PlanStore, record: PlanRecord, statuses: Sequence[TicketStatus], who: str) -> None:
    """Keep each ticket's state in its memo; a ticket that becomes `takeover` or `accepted` is logged."""
    for status in statuses:
        memo = record.memo(status.id, 0.0)
        if status.state != memo.state and status.state in ("takeover", "accepted"):
            store.log(who, status.state, status.reason, ticket=status.id, lane=status.lane)
        memo.state, memo.lane = status.state, status.lane


async def launch_ticket(frozen: FrozenPlan, launch: Launch, *, config: Config,
                        clock: Clock | None = None) -> LaneRecord | None:
    """Start the ticket's next lane; None when the lane before it is busy (tried on the next tick)."""
    ticket = frozen.plan.ticket(launch.ticket)
    repo = frozen.ticket_repo(ticket)
    task_type, provider = runs_on(config, ticket)  # the plan's config says what runs a ticket (docs/plans.md)
    if repo != frozen.repo:
        if not (repo / ".git").exists():
            raise LanesError(f"ticket {ticket.id}: its repository {ticket.repo} ({repo}) is not a git repository",
                             "fix repo = … in the plan and `lanes-tui plan amend`")
        config = load_config(repo)
    paths = StatePaths(repo)
    findings = ""
    resume: dict[str, Any] = {}
    if launch.after is not None:
        if lane_busy(paths, launch.after):
            return None
        old = LaneStore(paths, clock).read(launch.after)
        resume = resume_fields(old, fresh=False)  # the next attempt continues the agent's session
        if old.state in RECOVERABLE:  # stops what is left of it, reads its gates, stall, conflicts
            findings = (await inspect_lane(repo, config, launch.after, clock=clock)).prompt_block(old.attempt)
        else:
            findings = (f"\n\n## Findings from attempt {old.attempt}\n> Attempt {old.attempt} ended {old.state} "
                        f"({old.state_reason}).\n")
    request = LaunchRequest(
        prompt=ticket.prompt + ticket_block(frozen, ticket) + findings, task_type=task_type, lane=provider,
        slug=ticket.id, attempt=next_attempt(paths, ticket.id), scope=ticket.scope, plan=frozen.name,
        ticket=ticket.id, target=frozen.plan.target if repo == frozen.repo else None,
        model=tier_model(config, ticket), tier=ticket.tier, **resume)
    if config.runner.kind == "local":
        record = await asyncio.to_thread(launch_lane, repo, config, request, clock=clock)
    else:  # a cluster config: the ticket's lane runs where the lead's other lanes run
        record = await shared_runner(repo, config).start(request)
    if launch.after is not None:
        with contextlib.suppress(LanesError, OSError):
            store = LaneStore(paths, clock)
            old = store.read(launch.after)
            old.superseded_by = record.id
            store.write(old)
            store.event(launch.after, "relaunched", next=record.id, plan=frozen.name)
    return record


def runs_on(config: Config, ticket: Ticket) -> tuple[str, str | None]:
    """(task type, provider to try first): the ticket's `provider`, else its tier's, else the chain's own."""
    provider = ticket.provider
    if provider is None and ticket.tier is not None:
        tier = config.tiers.get(ticket.tier)
        if tier is None:
            where = config.path or ".lanes/config.toml"
            raise LanesError(f"ticket {ticket.id}: tier {ticket.tier!r} is not configured in {where}",
                             f"add [tiers.{ticket.tier}] provider = \"NAME\" there")
        provider = tier.provider
    return ticket.type or "backend", provider


def tier_model(config: Config, ticket: Ticket) -> str | None:
    """The model a ticket's tier names for its provider (`[tiers.NAME] model`), None otherwise."""
    if ticket.provider is not None or ticket.tier is None or ticket.tier not in config.tiers:
        return None
    return config.tiers[ticket.tier].model


def ticket_block(frozen: FrozenPlan, ticket: Ticket) -> str:
    """What the agent is told about its ticket: which plan, and the only files it may change."""
    lines = [f"Plan {frozen.name}, ticket {ticket.id}: {ticket.title}".rstrip(": ")]
    if ticket.scope:
        lines.append("Owned files (change nothing else: accept refuses changes outside them): "
                     + ", ".join(ticket.scope))
    return "\n\n## Plan ticket\n" + "\n".join(lines) + "\n"
