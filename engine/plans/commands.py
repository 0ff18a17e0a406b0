"""The lead's plan commands: launch (freeze and start), amend, cancel, resume.

Each one is recorded in the plan's decision log (`plans.state`) with who, when and why; each one
that changes the plan holds its tick lock, so no scheduler tick reads half of a change.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config, load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.plans.decide import Decision
from lanes_tui.engine.plans.model import Plan, TicketStatus
from lanes_tui.engine.plans.scheduler import advance, open_plan_names, plan_decision
from lanes_tui.engine.plans.state import FrozenPlan, PlanStore, lead_name, plan_names
from lanes_tui.engine.plans.supervisor import (
    plan_supervisor_alive,
    plan_supervisor_key,
    spawn_plan_supervisor,
    stop_plan_supervisor,
)
from lanes_tui.engine.plans.validate import load_plan
from lanes_tui.engine.procs.process import ProcKey

__all__ = ["PlanLaunched", "PlanSummary", "amend_plan", "cancel_plan", "launch_main", "launch_plan", "plan_log",
           "plan_summaries", "resume_plan"]


@dataclass(frozen=True)
class PlanLaunched:
    """What `plan launch` did: the frozen plan, the first tick, the plan supervisor (None: not started)."""

    frozen: FrozenPlan
    decision: Decision
    supervisor: ProcKey | None


@dataclass(frozen=True)
class PlanSummary:
    """One launched plan as `plan status` shows it."""

    name: str
    state: str
    amendment: int
    source: str
    target: str | None
    #: The plan supervisor's pid while it runs, else None.
    supervisor_pid: int | None
    tickets: tuple[TicketStatus, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.state, "amendment": self.amendment, "source": self.source,
                "target": self.target, "supervisor_pid": self.supervisor_pid,
                "tickets": [t.to_json() for t in self.tickets]}


def plan_summaries(repo: Path, name: str | None = None, *, reconciled: bool = True,
                   every: bool = False) -> list[PlanSummary]:
    """The plan named, or every open plan (`every`: also those done or cancelled), each looked at now."""
    names = [name] if name else (plan_names(repo) if every else open_plan_names(repo))
    summaries = []
    for plan in names:
        store = PlanStore(repo, plan)
        frozen = store.read_plan()
        decision = plan_decision(repo, plan, reconciled=reconciled)
        key = plan_supervisor_key(repo, plan)
        summaries.append(PlanSummary(plan, decision.state, frozen.amendment, frozen.source, frozen.plan.target,
                                     key.pid if key is not None and key.alive() else None, decision.statuses))
    return summaries


def plan_log(repo: Path, name: str) -> list[dict[str, Any]]:
    """The plan's decision log, oldest first (who, what, when, why; an amend's diff)."""
    store = PlanStore(repo, name)
    store.read_plan()
    return store.read_log()


async def launch_plan(repo: Path, config: Config, plan: Plan, *, source: str, supervise: bool = True,
                      who: str | None = None, tick_s: float | None = None) -> PlanLaunched:
    """Freeze the plan into the state folder, start what can start, and start its plan supervisor."""
    who = who or lead_name()
    _check_repos(repo, plan)
    _check_ticket_ids(repo, plan)
    store = PlanStore(repo, plan.name)
    frozen = await asyncio.to_thread(store.freeze, plan, source=source, who=who)
    decision = await advance(repo, config, plan.name, who=f"{who}: plan launch")
    key = None
    if supervise and not decision.finished:
        key = await asyncio.to_thread(spawn_plan_supervisor, repo, plan.name, tick_s=tick_s)
    return PlanLaunched(frozen, decision, key)


async def amend_plan(repo: Path, config: Config, name: str, plan: Plan, *, reason: str, source: str,
                     who: str | None = None) -> tuple[list[str], Decision]:
    """Replace the frozen plan with `plan`, record the reason and the diff, and tick once."""
    who = who or lead_name()
    store = PlanStore(repo, name)
    store.read_plan()  # an unknown plan is refused before anything else
    _check_repos(repo, plan)
    _check_ticket_ids(repo, plan, besides=name)

    def change() -> list[str]:
        with store.tick_lock(who):
            return store.amend(plan, reason=reason, who=who, source=source)

    diff = await asyncio.to_thread(change)
    return diff, await advance(repo, config, name, who=f"{who}: plan amend")


async def cancel_plan(repo: Path, name: str, *, why: str = "", who: str | None = None) -> list[str]:
    """Stop the plan supervisor, mark the plan cancelled; returns the plan's lanes still live or ready.

    Its lanes are left alone: they are the lead's to accept or abandon like any other lane.
    """
    who = who or lead_name()
    store = PlanStore(repo, name)
    store.read_plan()
    if store.state() == "cancelled":
        raise LanesError(f"plan {name} is cancelled already")
    await stop_plan_supervisor(repo, name)

    def mark() -> None:
        with store.tick_lock(who):
            store.set_state("cancelled", who=who, why=why or "cancelled by the lead")

    before = await asyncio.to_thread(plan_decision, repo, name)
    await asyncio.to_thread(mark)
    return [s.lane for s in before.statuses if s.state in ("running", "ready") and s.lane]


def resume_plan(repo: Path, name: str, *, tick_s: float | None = None) -> tuple[ProcKey, bool]:
    """Start the plan supervisor again (after a restart); (its identity, whether it was running already)."""
    store = PlanStore(repo, name)
    store.read_plan()
    state = store.state()
    if state != "open":
        raise LanesError(f"plan {name} is {state}; there is nothing to resume",
                         "see `lanes-tui plan status " + name + "`")
    running = plan_supervisor_alive(repo, name)
    return spawn_plan_supervisor(repo, name, tick_s=tick_s), running


def _check_repos(repo: Path, plan: Plan) -> None:
    """Every repository a ticket names exists and is a git repository (its lanes run there)."""
    probe = FrozenPlan(plan, repo, 0.0)
    for ticket in plan.tickets:
        where = probe.ticket_repo(ticket)
        if ticket.repo and not (where / ".git").exists():
            raise LanesError(f"ticket {ticket.id}: repo {ticket.repo!r} ({where}) is not a git repository",
                             "give the path of a repository relative to this one, e.g. repo = \"../other\"")


def _check_ticket_ids(repo: Path, plan: Plan, *, besides: str | None = None) -> None:
    """Two open plans may not share a ticket id in one repository: their lanes would share `<id>-aN`."""
    mine = {(FrozenPlan(plan, repo, 0.0).ticket_repo(t), t.id) for t in plan.tickets}
    for other in open_plan_names(repo):
        if other in (plan.name, besides):
            continue
        try:
            frozen = PlanStore(repo, other).read_plan()
        except LanesError:
            continue
        for ticket in frozen.plan.tickets:
            if (frozen.ticket_repo(ticket), ticket.id) in mine:
                raise LanesError(f"ticket {ticket.id} is also a ticket of open plan {other} in the same repository",
                                 "rename it: each ticket's lanes are named <ticket>-aN")


def launch_main(argv: list[str]) -> int:
    """`python -m lanes_tui.engine.plans --repo R --launch FILE`: freeze and start, no plan supervisor.

    For the demo (`sim.demo`), which may not import `plans` (it sits below it): its dashboard's engine
    ticks the plan from then on.
    """
    parser = argparse.ArgumentParser(prog="lanes-tui-plan-launch")
    parser.add_argument("--repo", required=True, type=Path)
    parser.add_argument("--launch", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        config = load_config(args.repo)
        plan = load_plan(args.launch, args.repo, config)
        launched = asyncio.run(launch_plan(args.repo, config, plan, source=str(args.launch), supervise=False))
    except LanesError as exc:
        print(f"lanes-tui: {exc}", file=sys.stderr)
        return 2
    for lane in launched.decision.started:
        print(lane)
    return 0
