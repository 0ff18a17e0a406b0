"""Plan subcommands: `plan check`, `launch`, `status`, `amend`, `cancel`, `resume`, `log` (docs/plans.md).

`check` and `status` only look; the others change a plan and are the lead's alone (refused in a
shell that belongs to a lane, like `run` and `accept`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from lanes_tui.app.cli import voice
from lanes_tui.app.cli.lanes import repo_of
from lanes_tui.engine import (
    PlanSummary,
    StatePaths,
    TicketStatus,
    amend_plan,
    cancel_plan,
    check_report,
    launch_plan,
    load_config,
    load_plan,
    plan_log,
    plan_names,
    plan_summaries,
    plan_waves,
    resume_plan,
)

#: What changes a plan: refused inside a lane (`LANES_LANE` set), as the lead's other commands are.
LEAD_ONLY = frozenset({"launch", "amend", "cancel", "resume"})


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plan = sub.add_parser("plan", help="plans: tickets with scopes and blockers, launched as they unblock")
    psub = plan.add_subparsers(dest="plan_command", metavar="SUBCOMMAND", required=True)

    p = psub.add_parser("check", help="validate a plan file and print the waves its blockers give")
    p.add_argument("file", type=Path)
    p.add_argument("--json", action="store_true", help="one JSON object: plan, target, waves, tickets, lines")
    p.set_defaults(func=cmd_check)

    p = psub.add_parser("launch", help="freeze a plan into the state folder and start what can start")
    p.add_argument("file", type=Path)
    p.add_argument("--no-supervisor", action="store_true",
                   help="start no plan supervisor: the plan advances only while a dashboard is open")
    p.add_argument("--json", action="store_true",
                   help="one JSON object: plan, frozen, started, tickets, supervisor_pid, finished")
    p.set_defaults(func=cmd_launch)

    p = psub.add_parser("status", help="each ticket: state, lane, attempts, blocked by, owned files")
    p.add_argument("name", nargs="?", help="one plan (default: every open plan)")
    p.add_argument("--all", action="store_true", dest="every", help="also plans done or cancelled")
    p.add_argument("--json", action="store_true", help="a JSON list of ticket objects")
    p.set_defaults(func=cmd_status)

    p = psub.add_parser("amend", help="change a launched plan (the only way); the reason is recorded with the diff")
    p.add_argument("name")
    p.add_argument("--reason", required=True, help="why: recorded in the plan's decision log")
    p.add_argument("file", type=Path)
    p.set_defaults(func=cmd_amend)

    p = psub.add_parser("cancel", help="stop scheduling a plan (its lanes stay, yours to accept or abandon)")
    p.add_argument("name")
    p.add_argument("--reason", default="", help="why: recorded in the plan's decision log")
    p.set_defaults(func=cmd_cancel)

    p = psub.add_parser("resume", help="start a plan's supervisor again (after a restart)")
    p.add_argument("name")
    p.set_defaults(func=cmd_resume)

    p = psub.add_parser("log", help="a plan's decision log: who did what, when and why")
    p.add_argument("name")
    p.add_argument("--json", action="store_true", help="the log as JSON lines")
    p.set_defaults(func=cmd_log)


def _refuse_in_lane(args: argparse.Namespace) -> int | None:
    lane = os.environ.get("LANES_LANE", "")
    if not lane or args.plan_command not in LEAD_ONLY:
        return None
    shown = "".join(ch if ch.isprintable() else "?" for ch in lane)[:64]
    print(f"lanes-tui: lanes-tui plan {args.plan_command} is the lead's command; this shell belongs to lane "
          f"{shown} (LANES_LANE is set) — ask the lead instead: lanes-tui ask \"…\"", file=sys.stderr)
    return 2


def cmd_check(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    plan = load_plan(args.file, repo, load_config(repo))
    if args.json:  # a refusal stays one stderr line and exit 2, stdout empty (docs/cli.md)
        print(json.dumps({"plan": plan.name, "target": plan.target, "waves": plan_waves(plan),
                          "tickets": [t.to_json() for t in plan.tickets], "lines": check_report(plan)}, indent=2))
        return 0
    for line in check_report(plan):
        print(line)
    return 0


def cmd_launch(args: argparse.Namespace) -> int:
    if (refused := _refuse_in_lane(args)) is not None:
        return refused
    repo = repo_of(args)
    config = load_config(repo)
    plan = load_plan(args.file, repo, config)
    launched = asyncio.run(launch_plan(repo, config, plan, source=str(args.file),
                                       supervise=not args.no_supervisor))
    started = [(s.id, s.lane) for s in launched.decision.statuses if s.lane and s.lane in launched.decision.started]
    if args.json:
        print(json.dumps({"plan": plan.name, "frozen": str(StatePaths(repo).state / "plans" / plan.name),
                          "started": [{"ticket": ticket, "lane": lane} for ticket, lane in started],
                          "tickets": [t.to_json() for t in launched.decision.statuses],
                          "supervisor_pid": launched.supervisor.pid if launched.supervisor is not None else None,
                          "finished": launched.decision.finished}, indent=2))
        return 0
    if voice.level() == voice.QUIET:  # the lanes started, one id a line, as `run -q` prints its lane's
        for _, lane in started:
            print(lane)
        return 0
    print(check_report(plan)[0])
    print(f"plan {plan.name} frozen in .lanes/state/plans/{plan.name}")
    for ticket, lane in started:
        print(f"started {lane} (ticket {ticket})")
    _print_tickets(launched.decision.statuses)
    if launched.supervisor is not None:
        print(f"plan supervisor running (pid {launched.supervisor.pid}): the plan advances with no dashboard "
              f"open; `lanes-tui plan status {plan.name}`")
    elif not launched.decision.finished:
        print(f"no plan supervisor: the plan advances while a dashboard is open, or after "
              f"`lanes-tui plan resume {plan.name}`")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    summaries = plan_summaries(repo, args.name, every=args.every)
    if args.json:
        print(json.dumps([t.to_json() for s in summaries for t in s.tickets], indent=2))
        return 0
    if not summaries:
        others = plan_names(repo)
        print("no open plans" + (f" (done or cancelled: {', '.join(others)}; `lanes-tui plan status NAME`)"
                                 if others else ": launch one with `lanes-tui plan launch FILE`"))
        return 0
    for index, summary in enumerate(summaries):
        if index:
            print()
        _print_summary(summary)
    return 0


def cmd_amend(args: argparse.Namespace) -> int:
    if (refused := _refuse_in_lane(args)) is not None:
        return refused
    repo = repo_of(args)
    config = load_config(repo)
    plan = load_plan(args.file, repo, config)
    diff, decision = asyncio.run(amend_plan(repo, config, args.name, plan, reason=args.reason,
                                            source=str(args.file)))
    print(f"plan {args.name} amended: {args.reason}")
    for line in diff or ["(no change to the plan)"]:
        print(f"  {line}")
    for lane in decision.started:
        print(f"started {lane}")
    _print_tickets(decision.statuses)
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    if (refused := _refuse_in_lane(args)) is not None:
        return refused
    repo = repo_of(args)
    lanes = asyncio.run(cancel_plan(repo, args.name, why=args.reason))
    print(f"plan {args.name} cancelled: nothing more of it starts")
    if lanes:
        print(f"its lanes still running or ready (yours to accept or abandon): {', '.join(lanes)}")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    if (refused := _refuse_in_lane(args)) is not None:
        return refused
    repo = repo_of(args)
    key, running = resume_plan(repo, args.name)
    print(f"plan supervisor of {args.name} {'was running already' if running else 'started'} (pid {key.pid})")
    return 0


def cmd_log(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    for entry in plan_log(repo, args.name):
        if args.json:
            print(json.dumps(entry, sort_keys=True))
            continue
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(entry.get("t") or 0)))
        what = str(entry.get("what", "?")) + "".join(f" {k} {entry[k]}" for k in ("ticket", "lane", "after")
                                                     if isinstance(entry.get(k), str))
        print(f"{when}  {entry.get('who', '?')}: {what}: {entry.get('why', '')}")
        for line in entry.get("diff") or []:
            print(f"    {line}")
    return 0


def _print_summary(summary: PlanSummary) -> None:
    supervisor = (f"plan supervisor pid {summary.supervisor_pid}" if summary.supervisor_pid
                  else "no plan supervisor" + (f" (`lanes-tui plan resume {summary.name}`)"
                                               if summary.state == "open" else ""))
    amended = f", amended {summary.amendment}x" if summary.amendment else ""
    target = f", target {summary.target}" if summary.target else ""
    print(f"plan {summary.name}: {summary.state}{amended}{target}; {supervisor}")
    _print_tickets(summary.tickets)


def _print_tickets(tickets: Sequence[TicketStatus]) -> None:
    """The tickets grouped by repository (`.` is the plan's own), one row each and its reason."""
    repos: dict[str, list[TicketStatus]] = {}
    for ticket in tickets:
        repos.setdefault(ticket.repo or ".", []).append(ticket)
    width = max([6, *(len(t.id) for t in tickets)])
    lanes = max([4, *(len(t.lane or "") for t in tickets)])
    for repo, rows in repos.items():
        print(f"repository {repo}")
        print(f"  {'TICKET':<{width}}  {'STATE':<9} {'LANE':<{lanes}} {'TRIES':>5} {'FILES':>5}  BLOCKED BY")
        for t in rows:
            print(f"  {t.id:<{width}}  {t.state:<9} {t.lane or '-':<{lanes}} "
                  f"{f'{t.attempts}/{t.max_attempts}':>5} {t.owned_files:>5}  {', '.join(t.blocked_by) or '-'}")
            if t.reason:
                print(f"  {'':<{width}}  {_shorten(t.reason)}")


def _shorten(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

