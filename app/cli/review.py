"""Review subcommands: `review ID` (a second model's verdict, by hand) and `verify ID --evidence TEXT`
(the lead's own check). See docs/review.md."""

from __future__ import annotations

import argparse
import json
import sys

from lanes_tui.app.cli.lanes import repo_of
from lanes_tui.engine import Decisions, describe_review


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("review", help="review a lane's diff by a model of another family (again), now",
                       description="Runs the [review] chain's first reviewer of another family than the lane's "
                                   "writers on the lane's scoped diff, whatever [review] mode says. Exit 0 for "
                                   "CLEAN, 1 for BLOCKING, 3 for MISSING (no verdict).")
    p.add_argument("lane_id")
    p.add_argument("--json", action="store_true",
                   help="one JSON object: id, verdict, reviewer, family, reason, findings, tail, diff_digest")
    p.set_defaults(func=cmd_review)

    p = sub.add_parser("verify", help="record your own verification of a lane, with the evidence",
                       description="Records who verified the lane, when, your evidence and the digest of the "
                                   "lane's diff in its packet; the accept modal shows it (stale once the lane "
                                   "changes).")
    p.add_argument("lane_id")
    p.add_argument("--evidence", required=True, metavar="TEXT", help="what you checked and what you saw")
    p.add_argument("--json", action="store_true", help="one JSON object: id, by, at, evidence, diff_digest")
    p.set_defaults(func=cmd_verify)


#: `review`'s exit codes: a script can tell a blocked lane from a review that did not happen.
EXIT_FOR = {"CLEAN": 0, "BLOCKING": 1, "MISSING": 3}


def cmd_review(args: argparse.Namespace) -> int:
    decide = Decisions(repo_of(args))
    detail = decide.run(decide.review(args.lane_id))
    if args.json:  # the exit code says the same as without --json
        print(json.dumps({"id": args.lane_id, "verdict": detail.verdict, "reviewer": detail.reviewer,
                          "family": detail.family, "reason": detail.reason,
                          "findings": [{"path": f.path, "line": f.line, "text": f.text} for f in detail.findings],
                          "tail": detail.tail, "diff_digest": detail.diff_digest}, indent=2))
        return EXIT_FOR.get(detail.verdict, 3)
    print("\n".join(describe_review(detail.to_json(), shown=len(detail.findings))))
    if detail.verdict == "MISSING" and detail.tail:
        print("the reviewer's last lines:", *(f"  {line}" for line in detail.tail.splitlines()),
              sep="\n", file=sys.stderr)
    return EXIT_FOR.get(detail.verdict, 3)


def cmd_verify(args: argparse.Namespace) -> int:
    decide = Decisions(repo_of(args))
    done = decide.run(decide.verify(args.lane_id, args.evidence))
    if args.json:
        print(json.dumps({"id": args.lane_id, **done.to_json()}, indent=2))
        return 0
    print(f"{args.lane_id}: verified by {done.by} at the diff {done.diff_digest[:19]}…")
    return 0
