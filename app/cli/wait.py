"""The `wait` command: block until a lane reaches a state, or until any lane needs the lead.

Apart from `lanes` (init, run, status) because it is the one command that polls and sleeps rather than
acts or reads once; scripts and the lead's own loops call it on its own, with its own exit code (124).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from lanes_tui.app.cli import args as cli_args
from lanes_tui.app.cli.lanes import repo_of
from lanes_tui.engine import (
    NEEDS_LEAD_STATES,
    SETTLED_STATES,
    STATES,
    LaneRecord,
    LanesError,
    lane_settled,
    lanes_needing_lead,
    read_lane,
)

#: `wait`'s exit code when its `--timeout` passes, as timeout(1)'s: apart from 2, a refusal.
WAIT_TIMED_OUT = 124


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("wait", help="block until a lane reaches one of the given states (or --any lane needs you)")
    p.add_argument("lane_id", nargs="?", help="the lane to wait for (or --any)")
    p.add_argument("--until", default=None,
                   help="comma-separated states (default: settled: ready, rejected, stalled, exited, … with "
                        "its supervisor finished)")
    p.add_argument("--any", action="store_true",
                   help="wake on the first lane that needs you (in one of --states) and print it")
    p.add_argument("--states", metavar="A,B", default=None,
                   help=f"with --any: the states that count (default: {','.join(NEEDS_LEAD_STATES)})")
    p.add_argument("--timeout", type=cli_args.seconds, default=None,
                   help=f"seconds; exit {WAIT_TIMED_OUT} when it passes (like timeout(1))")
    p.add_argument("--json", action="store_true", help="the lane as a JSON object: id, state, result, reason")
    p.set_defaults(func=cmd_wait)


def cmd_wait(args: argparse.Namespace) -> int:
    """`wait ID [--until …]` or `wait --any [--states …]`: 0 when it came, 124 at `--timeout`, 2 refused."""
    repo = repo_of(args)
    if args.any:
        return _wait_any(repo, args)
    if args.lane_id is None or args.states is not None:
        raise LanesError("wait needs a lane id, or --any (with --states)",
                         "`lanes-tui wait ID [--until a,b]` or `lanes-tui wait --any [--states a,b]`")
    settled = args.until is None
    wanted = set(SETTLED_STATES) if settled else _states(args.until, "--until")
    read_lane(repo, args.lane_id, reconciled=False)
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    while True:
        record = read_lane(repo, args.lane_id)
        # `exited` and `stalled` are on the way to a packet while the supervisor still runs.
        if (lane_settled(repo, record) if settled else record.state in wanted):
            return _waited(record, args.json)
        if deadline is not None and time.monotonic() >= deadline:
            print(f"lanes-tui: {record.id} is still {record.state} after {args.timeout:g}s", file=sys.stderr)
            return WAIT_TIMED_OUT
        time.sleep(0.1)


def _wait_any(repo: Path, args: argparse.Namespace) -> int:
    """The first lane (the longest in it) in one of the states; lanes already there count at once."""
    if args.lane_id is not None or args.until is not None:
        raise LanesError("wait --any takes no lane id or --until", "name the states with --states a,b")
    wanted = set(NEEDS_LEAD_STATES) if args.states is None else _states(args.states, "--states")
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    while True:
        found = lanes_needing_lead(repo, wanted)
        if found:
            return _waited(found[0], args.json)
        if deadline is not None and time.monotonic() >= deadline:
            print(f"lanes-tui: no lane became {' or '.join(sorted(wanted))} within {args.timeout:g}s",
                  file=sys.stderr)
            return WAIT_TIMED_OUT
        time.sleep(0.25)


def _states(text: str, flag: str) -> set[str]:
    wanted = {s.strip() for s in text.split(",") if s.strip()}
    unknown = wanted - set(STATES)
    if unknown or not wanted:
        raise LanesError(f"unknown state(s) in {flag}: {', '.join(sorted(unknown)) or repr(text)}",
                         f"use some of: {' '.join(STATES)}")
    return wanted


def _waited(record: LaneRecord, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"id": record.id, "state": record.state, "result": record.result,
                          "reason": record.state_reason}))
    else:
        print(f"{record.id} {record.state} {record.result or ''}".rstrip())
    return 0
