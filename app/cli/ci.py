"""`lanes-tui ci [PR]` and `finish --pr --watch`: follow a pull request's checks (docs/decisions.md, "CI").

The engine asks `gh` (`decisions.pr_checks`); this module prints each check's change of state as it
comes, and on a failure the findings file and the command that relaunches a lane with it. Exit 0 when
every check passed, 1 when one failed, 2 when there is no answer (`--timeout` passed, no check came,
gh missing or failing), 130 on Ctrl-C — which stops the gh call in flight and changes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from lanes_tui.app.cli.lanes import repo_of
from lanes_tui.engine import (
    Clock,
    LanesError,
    RealClock,
    find_pr,
    follow_checks,
    load_config,
    programme_branch,
    write_ci_findings,
)

TIMEOUT_S = 3600.0
INTERVAL_S = 15.0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ci", help="follow a pull request's CI checks with gh until they finish; "
                                  "a failed check becomes findings to relaunch a lane with")
    p.add_argument("pr", nargs="?", metavar="PR",
                   help="the pull request: number, URL or branch (default: the programme branch's)")
    add_watch_options(p)
    p.add_argument("--json", action="store_true",
                   help="one JSON object at the end (docs/cli.md); the lines go to stderr; the exit code is the same")
    p.set_defaults(func=cmd_ci)


def add_watch_options(p: argparse.ArgumentParser) -> None:
    """`--timeout` and `--interval`, shared by `ci` and `finish --pr --watch`."""
    p.add_argument("--timeout", type=float, default=TIMEOUT_S, metavar="S",
                   help=f"stop following after S seconds (exit 2; default {TIMEOUT_S:.0f})")
    p.add_argument("--interval", type=float, default=INTERVAL_S, metavar="S",
                   help=f"ask gh every S seconds (default {INTERVAL_S:.0f})")


def make_clock() -> Clock:
    """The clock the follower waits with (a test replaces this with a fake clock)."""
    return RealClock()


def cmd_ci(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    which = args.pr or programme_branch(repo, load_config(repo))
    code, data = watch(repo, which, timeout_s=args.timeout, interval_s=args.interval,
                       out=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(data, indent=2))
    return code


def check_watch_options(timeout_s: float, interval_s: float) -> None:
    if not 0 < timeout_s <= 7 * 24 * 3600:
        raise LanesError(f"--timeout {timeout_s:g} is not a number of seconds up to a week", "e.g. --timeout 3600")
    if not 0 < interval_s <= 3600:
        raise LanesError(f"--interval {interval_s:g} is not a number of seconds up to an hour", "e.g. --interval 15")


def watch(repo: Path, which: str, *, timeout_s: float = TIMEOUT_S, interval_s: float = INTERVAL_S,
          out: TextIO | None = None) -> tuple[int, dict[str, Any]]:
    """Follow the pull request `which` names, printing to `out`; (exit code, the `--json` object)."""
    check_watch_options(timeout_s, interval_s)
    stream = out or sys.stdout
    data: dict[str, Any] = {"pr": None, "status": "interrupted", "reason": "", "checks": [], "findings": None,
                            "lanes": [], "commands": []}

    def say(line: str) -> None:
        print(line, file=stream, flush=True)

    async def follow() -> int:
        pr = await find_pr(repo, which)
        data["pr"] = {"number": pr.number, "url": pr.url, "head": pr.head, "base": pr.base}
        say(f"following the checks of PR #{pr.number} {pr.url}: every {interval_s:g}s, at most {timeout_s:g}s")
        outcome = await follow_checks(repo, pr, clock=make_clock(), on_line=say, interval_s=interval_s,
                                      timeout_s=timeout_s)
        data.update(outcome.to_json())
        if outcome.status in ("timeout", "none"):
            print(f"lanes-tui: {outcome.reason}", file=sys.stderr)  # exit 2's one line (docs/cli.md)
            return outcome.code
        say(outcome.reason)
        if outcome.failed:
            findings = await write_ci_findings(repo, pr, outcome)
            data.update(findings=str(findings.path), lanes=findings.lanes, commands=findings.commands)
            say(f"findings: {findings.path}")
            if findings.lanes:
                for line in findings.commands:
                    say(f"relaunch with them: {line}")
            else:
                say(f"no accepted lane's work found in PR #{pr.number}; name the lane yourself: {findings.commands[0]}")
                say(f"or start a new lane with them: {findings.commands[1]}")
        return outcome.code

    try:
        return asyncio.run(follow()), data
    except KeyboardInterrupt:
        print(f"lanes-tui: stopped following the checks (Ctrl-C); nothing changed — `lanes-tui ci {which}` "
              "follows them again", file=sys.stderr)
        return 130, data
