"""`lanes-tui stop ID | --all`: stop lanes' agents and keep their worktrees (docs/lanes.md, "Stopping a lane")."""

from __future__ import annotations

import argparse
import asyncio
import json

from lanes_tui.app.cli_lanes import repo_of
from lanes_tui.engine import live_lane_ids, stop_lanes


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("stop", help="stop a lane's agent; its worktree and work stay",
                       description="Stop the lane's agent and supervisor (escalating) and return once the whole "
                                   "process tree is gone. The lane ends exited, LANE-FAILED \"stopped by the lead\"; "
                                   "its worktree, changes and branch stay for recover, check or diff. "
                                   "Exit 0: stopped; 2: no such lane, or it is not running.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("lane_id", nargs="?", help="the lane to stop")
    which.add_argument("--all", action="store_true", help="every lane whose supervisor is alive")
    p.add_argument("--json", action="store_true", help="a JSON list: id, state, result, reason, worktree, forced_pids")
    p.set_defaults(func=cmd_stop)


def cmd_stop(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    ids = live_lane_ids(repo) if args.all else [args.lane_id]
    if not ids and not args.json:
        print("no lane is running; nothing to stop")
    reports = asyncio.run(stop_lanes(repo, ids)) if ids else []
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))
    else:
        for report in reports:
            print(report.line())
    return 0

