"""`lanes-tui stop ID | --all`: stop lanes' agents and keep their worktrees (docs/lanes.md, "Stopping a lane")."""

from __future__ import annotations

import argparse
import asyncio
import json

from lanes_tui.app.cli import voice
from lanes_tui.app.cli.lanes import repo_of
from lanes_tui.engine import Config, LanesError, lane_statuses, live_lane_ids, load_config, stop_lanes


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
    try:
        config: Config | None = load_config(repo)
    except LanesError:  # a config that cannot be read names no cluster: local lanes still stop
        config = None
    remote: list[str] = []
    if config is not None and config.runner.kind != "local":  # lanes on cluster nodes are stopped through their runner
        from lanes_tui.app.cli.remote import is_remote, live_remote_ids

        if args.all:
            remote = live_remote_ids(repo, [s.id for s in lane_statuses(repo) if not s.problem])
        elif is_remote(repo, args.lane_id):
            remote = [args.lane_id]
    ids = live_lane_ids(repo) if args.all else [] if remote else [args.lane_id]
    if not ids and not remote and not args.json:
        voice.note("no lane is running; nothing to stop")
    reports = asyncio.run(stop_lanes(repo, ids)) if ids else []
    if remote and config is not None:
        from lanes_tui.app.cli.remote import stop_remote

        reports += stop_remote(repo, config, remote)
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))
    else:
        for report in reports:
            print(report.line())
    return 0

