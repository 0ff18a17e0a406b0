"""`lanes-tui scorecard prepare|record|baseline|compare|tasks`: fixed tasks scored run after run.

The scorecard benchmarks the orchestration, not the dashboard (docs/benchmarks.md, "Scorecard"):
`prepare` builds a task's repository and starts a lane on it, `record` scores the finished lane,
`baseline` keeps the newest records under a name, `compare` holds the newest records to it and
exits 1 when a task regressed. All of it is the lead's (refused inside a lane: `LEAD_ONLY`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lanes_tui.app.cli.lanes import repo_of
from lanes_tui.engine import (
    scorecard_baseline,
    scorecard_compare,
    scorecard_prepare,
    scorecard_record,
    scorecard_tasks,
)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    card = sub.add_parser("scorecard", help="run fixed tasks, score the lanes, compare against a baseline")
    csub = card.add_subparsers(dest="scorecard_command", metavar="SUBCOMMAND", required=True)

    p = csub.add_parser("prepare", help="build a task's repository at its commit and start a lane on it")
    p.add_argument("task", help="a shipped task's name (see `scorecard tasks`) or a task file's path")
    p.add_argument("--work-dir", type=Path, default=None,
                   help="where the task's repository is made (default: .lanes/state/scorecard/work)")
    p.add_argument("--prompt", default=None, help="run this prompt instead of the task's own")
    p.add_argument("--json", action="store_true", help="an object: task, run, id, repo, lane, plan, lanes, commit")
    p.set_defaults(func=cmd_prepare)

    p = csub.add_parser("record", help="score a finished lane (or a plan's lanes) and store the record")
    p.add_argument("id", help="the id `prepare` printed: a lane id, or a plan task's plan name")
    p.add_argument("--label", default="latest", help="the records' label (default: latest)")
    p.add_argument("--json", action="store_true", help="the record as JSON")
    p.set_defaults(func=cmd_record)

    p = csub.add_parser("baseline", help="keep the newest record of each task as a named baseline")
    p.add_argument("label", help="the baseline's name")
    p.add_argument("--from", dest="source", default=None,
                   help="the records' label to copy (default: the records labelled LABEL)")
    p.set_defaults(func=cmd_baseline)

    p = csub.add_parser("compare", help="the newest records against a baseline; exit 1 when a task regressed")
    p.add_argument("label", help="the baseline's name")
    p.add_argument("--label", dest="runs", default=None, help="compare only records with this label")
    p.add_argument("--factor", type=float, default=1.5,
                   help="allowed growth of tokens, cost and wall time (default 1.5)")
    p.add_argument("--json", action="store_true",
                   help="an object: baseline, ok, tasks (regressed, problems, baseline, now)")
    p.set_defaults(func=cmd_compare)

    p = csub.add_parser("tasks", help="the task files shipped with lanes-tui")
    p.set_defaults(func=cmd_tasks)


def cmd_prepare(args: argparse.Namespace) -> int:
    done = scorecard_prepare(repo_of(args), args.task, args.work_dir, args.prompt)
    if args.json:
        print(json.dumps({"task": done.task, "run": done.run, "id": done.ident, "repo": str(done.repo),
                          "lane": done.lane, "plan": done.plan, "lanes": list(done.lanes), "commit": done.commit}))
        return 0
    print(f"task {done.task} (run {done.run}) at {done.commit[:12]} in {done.repo}")
    if done.plan:
        print(f"plan {done.plan} launched: {', '.join(done.lanes) or 'no lane started'}; "
              f"see lanes-tui --repo {done.repo} plan status {done.plan}; then: lanes-tui scorecard record {done.plan}")
    else:
        print(f"wait for it: lanes-tui --repo {done.repo} wait {done.lane}; "
              f"then: lanes-tui scorecard record {done.lane}")
    print(done.ident)
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    entry = scorecard_record(repo_of(args), args.id, args.label)
    if args.json:
        print(json.dumps(entry, indent=2))
        return 0
    print(_line(entry))
    if entry.get("replaces"):
        print(f"note: replaces the record of {entry['task']} under label {entry['label']} "
              f"(lane {entry['replaces'].get('lane')}) for baseline and compare; both stay in records.jsonl")
    return 0


def _line(entry: dict[str, Any]) -> str:
    i = entry["interventions"]
    return (f"{entry['task']}: {'passed' if entry['passed'] else 'FAILED'} ({entry['state']}, {entry['result']}), "
            f"first try {'yes' if entry['first_try'] else 'no'}, {entry['wall_minutes']:.2f} min, "
            f"{entry['tokens']} tokens, ${entry['cost_usd']:.4f}, answers {i['answers']}, sends {i['sends']}, "
            f"relaunches {i['relaunches']}, review rounds {entry['review_rounds']}")


def cmd_baseline(args: argparse.Namespace) -> int:
    rows = scorecard_baseline(repo_of(args), args.label, args.source)
    print(f"baseline {args.label}: {', '.join(sorted(rows))}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    report = scorecard_compare(repo_of(args), args.label, label=args.runs, factor=args.factor)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for task in report["tasks"]:
            verdict = "ok" if task["ok"] else f"REGRESSED ({', '.join(task['regressed'])}): " + "; ".join(
                task["problems"])
            print(f"{task['task']}: {verdict}")
        print("pass" if report["ok"] else f"fail: worse than baseline {args.label}")
    return 0 if report["ok"] else 1


def cmd_tasks(args: argparse.Namespace) -> int:
    for name in scorecard_tasks():
        print(name)
    return 0
