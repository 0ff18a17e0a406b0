"""Decision subcommands: check, accept, abandon, recover, finish, diff (PRODUCT.md, "Command line")."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from lanes_tui.app.cli import voice
from lanes_tui.app.cli.ci import add_watch_options, check_watch_options, watch
from lanes_tui.app.cli.lanes import repo_of
from lanes_tui.engine import (
    Decisions,
    FinishReport,
    LanesError,
    Packet,
    accept_git_config,
    check_gh,
    confirm_git_watch,
    duration_text,
    gate_files_line,
    git_watch_warnings,
    group_members,
    lane_diff,
    load_config,
    open_pr,
    programme_branch,
    push_branch,
    push_url,
    read_lane,
    trusted_hooks,
)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="run a lane's gates again and rewrite its packet")
    p.add_argument("lane_id")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md); the exit code is the same")
    p.add_argument("--log", action="store_true",
                   help="print the last check's steps and the failing step's output; runs nothing (docs/gates.md)")
    p.add_argument("--accept-git-config", action="store_true",
                   help="the shared git config, hooks and attributes as they are now are yours: record them as the "
                        "lane's (and the git watch's) before the check (docs/decisions.md)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("accept", help="the guarded accept: gates, digest, commit, rebase if needed, fast-forward")
    p.add_argument("lane_id", nargs="?", help="the lane to accept (or --queue)")
    p.add_argument("--queue", action="store_true",
                   help="accept every ready lane, in an order that avoids the conflict radar's conflicts; "
                        "skips a lane with nothing to merge, stops at the first other refusal")
    p.add_argument("--message", "-m", help="the commit message (default: from the task)")
    p.add_argument("--override", metavar="REASON", help="accept a lane that is not ready; the reason is recorded")
    p.add_argument("--override-review", metavar="REASON",
                   help="accept over a BLOCKING or stale review; the reason is recorded")
    p.add_argument("--no-verify", metavar="REASON",
                   help="skip the repository's pre-commit and commit-msg hooks; the reason is recorded "
                        "(docs/decisions.md)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would happen and change nothing (exit as the accept would: 2 if refused)")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md); the exit code is the same")
    p.set_defaults(func=cmd_accept)

    p = sub.add_parser("abandon", help="stop a lane, remove its worktree and lane/ branch (packet and logs stay)")
    p.add_argument("lane_id")
    p.add_argument("--force", action="store_true", help="also when its branch has commits found nowhere else")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md); the exit code is the same")
    p.set_defaults(func=cmd_abandon)

    p = sub.add_parser("recover", help="bring a lost, stalled, rejected or failed lane back to a known state")
    p.add_argument("lane_id")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--recheck", action="store_true", help="run the gates on the worktree as it is")
    mode.add_argument("--relaunch", action="store_true",
                      help="start the next attempt with the findings, resuming the agent's own session where its "
                           "CLI can (docs/lanes.md)")
    p.add_argument("--fresh", action="store_true", help="with --relaunch: a new session, not the old one resumed")
    notes = p.add_mutually_exclusive_group()
    notes.add_argument("--note", metavar="TEXT",
                       help="with --relaunch: your own findings for the next attempt's prompt")
    notes.add_argument("--note-file", metavar="F", type=Path,
                       help="with --relaunch: your findings from a UTF-8 text file (64 KiB at most)")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md); the exit code is the same")
    p.set_defaults(func=cmd_recover)

    p = sub.add_parser("finish", help="remove merged lane worktrees and branches; list leftovers; push")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md); the exit code is the same")
    p.add_argument("--no-push", action="store_true", help="do not push the programme branch to its upstream")
    p.add_argument("--pr", action="store_true", help="then open a pull request with gh (installed and logged in)")
    p.add_argument("--watch", action="store_true",
                   help="with --pr: then follow the pull request's checks, as `lanes-tui ci` does (docs/decisions.md)")
    add_watch_options(p)
    p.add_argument("--push-anyway", action="store_true",
                   help="push although leftovers remain, or the git watch saw the target move without an accept or "
                        "a remote change (that records the watch anew; docs/decisions.md)")
    p.set_defaults(func=cmd_finish)

    p = sub.add_parser("diff", help="a lane's diff against its base, with per-file digests")
    p.add_argument("lane_id")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--stat", action="store_true", help="one line per file and the overall digest")
    shape.add_argument("--json", action="store_true", help="files, digests, scope and diffs as one JSON object")
    p.set_defaults(func=cmd_diff)


def cmd_check(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    if args.log:
        return _print_gate_log(repo, args.lane_id)
    decide = Decisions(repo)
    if args.accept_git_config:  # the lead says the change is theirs: printed, so it is never silent
        for change in accept_git_config(repo, args.lane_id):
            print(f"accepted as yours: {change}")
    packet = decide.run(decide.check(args.lane_id))  # on a cluster node's lane: there, through the runner
    code = 0 if packet.ok else 1
    if args.json:
        return _json({"id": args.lane_id, **_gates(packet), "warnings": list(packet.warnings)}, code)
    for gate in packet.gates:
        print(f"{gate.status:>8}  {gate.command}  (exit {gate.exit_code}, {gate.duration_s}s)")
    for warning in packet.warnings:
        print(f"WARNING: {warning}")
    if left := gate_files_line(packet.gate_files):
        print(left)
    print(f"{args.lane_id}: gates {packet.gates_status}, next: {packet.next}")
    return code


def _print_gate_log(repo: Path, lane_id: str) -> int:
    """`check ID --log`: what the Gates tab shows, as text; exit 1 when a step failed or timed out."""
    decide = Decisions(repo)
    report = decide.run(decide.gate_report(lane_id))
    if report.planned:
        print(f"{lane_id}: no check has run yet; a check would run:")
    for wait in report.waits:  # before the steps, as it happened: the slot, the load, or why none ran
        print(wait)
    for step in report.steps:
        took = "" if step.status in ("planned", "not-run") else duration_text(step.duration_s)
        code = f"exit {step.exit_code}" if step.exit_code is not None else ""
        print(f"{step.status:>8}  {step.name:<12} {took:>6} {code:<7} {step.command}")
    for warning in report.warnings:
        print(f"WARNING: {warning}")
    if left := gate_files_line(list(report.gate_files)):
        print(left)
    if report.failing is not None:
        print(f"--- output of {report.failing} ---")
        print(report.output.rstrip("\n"))
    return 1 if report.failing is not None else 0


def _json(value: object, code: int = 0) -> int:
    """Print the `--json` object of a command (docs/cli.md has each shape) and return its exit code."""
    print(json.dumps(value, indent=2, default=str))
    return code


def _gates(packet: Packet) -> dict[str, Any]:
    """A packet's gates as `check --json` and `recover --recheck --json` show them."""
    return {"gates_status": packet.gates_status, "next": packet.next, "gates": [g.to_json() for g in packet.gates]}


def cmd_accept(args: argparse.Namespace) -> int:
    if args.queue:
        return cmd_accept_queue(args)
    if not args.lane_id:
        raise LanesError("accept needs a lane id", "name the lane (`lanes-tui status` lists them), or use --queue")
    repo = repo_of(args)
    decide = Decisions(repo)
    if args.dry_run:
        plan = decide.run(decide.plan_accept(args.lane_id, override=args.override,
                                             override_review=args.override_review))
        code = 0 if plan.ok else 2  # as the accept itself: refused before anything changed
        if args.json:
            return _json({"id": args.lane_id, "dry_run": True, "ok": plan.ok, "state": plan.state,
                          "target": plan.target, "target_sha": plan.target_sha, "files": plan.files,
                          "gates_status": plan.gates_status, "needs_rebase": plan.needs_rebase,
                          "outside_scope": plan.outside_scope, "refusals": plan.refusals,
                          "warnings": plan.warnings, "lines": plan.describe()}, code)
        print("\n".join(plan.describe()))
        return code
    outcome = decide.run(decide.accept(args.lane_id, message=args.message, override=args.override,
                                       override_review=args.override_review, no_verify=args.no_verify))
    if args.json:
        return _json({"id": outcome.lane_id, "dry_run": False, "ok": outcome.state == "accepted",
                      "state": outcome.state, "message": outcome.message, "merged_sha": outcome.merged_sha,
                      "conflict_files": list(outcome.conflict_files), "warnings": list(outcome.warnings)},
                     0 if outcome.state == "accepted" else 1)
    for warning in outcome.warnings:
        print(f"lanes-tui: WARNING: {warning}", file=sys.stderr)
    if outcome.state != "accepted":
        print(f"lanes-tui: {outcome.message}", file=sys.stderr)
        return 1
    print(outcome.message)
    _print_group_rest(repo, args.lane_id)
    return 0


def _print_group_rest(repo: Path, lane_id: str) -> None:
    """After a best-of lane is accepted: the group's other open lanes with their worktrees, and the
    command that drops each. Never done here: the lead may want a second look at the runner-up."""
    try:
        group = read_lane(repo, lane_id, reconciled=False).group
        rest = [s for s in group_members(repo, group) if s.id != lane_id
                and s.state not in ("accepted", "abandoned")] if group else []
    except LanesError as exc:  # the accept is done: a listing that fails is a warning, not a failed accept
        print(f"lanes-tui: WARNING: cannot list the rest of the lane's best-of group: {exc}", file=sys.stderr)
        return
    if not rest:
        return
    voice.note(f"best-of group {group}: {len(rest)} other lane{'' if len(rest) == 1 else 's'} still open:")
    for other in rest:
        voice.note(f"  #{other.rank or '-'} {other.id:<28} {other.state:<10} {other.worktree}")
    voice.note("abandon them with:")
    for other in rest:
        voice.note(f"  lanes-tui abandon {other.id}")


def cmd_accept_queue(args: argparse.Namespace) -> int:
    """`accept --queue [--dry-run]`: one line per lane, the order and why, or what became of each lane."""
    if args.lane_id or args.override or args.message or args.no_verify is not None:
        raise LanesError("accept --queue takes no lane id, --override, --no-verify or --message",
                         "accept that lane on its own, or run the queue without them")
    decide = Decisions(repo_of(args))
    plan = decide.run(decide.plan_queue())
    order = [{"id": e.lane_id, "why": e.why, "last": e.last} for e in plan.entries]
    if args.dry_run or not plan.entries:
        if args.json:
            return _json({"dry_run": True, "order": order, "steps": [], "ok": True})
        print("\n".join(plan.describe()))
        return 0
    show = None if args.json else (lambda step: print(step.line(), flush=True))
    report = decide.run(decide.accept_queue(plan, on_step=show))
    code = 0 if report.ok else 1
    if args.json:
        return _json({"dry_run": False, "order": order, "ok": report.ok,
                      "steps": [{"id": s.lane_id, "state": s.state, "message": s.message} for s in report.steps]},
                     code)
    return code


def cmd_abandon(args: argparse.Namespace) -> int:
    decide = Decisions(repo_of(args))
    removed = decide.run(decide.abandon(args.lane_id, force=args.force))
    if args.json:
        return _json({"id": args.lane_id, "removed": list(removed)})
    print(f"abandoned {args.lane_id}: " + ("; ".join(removed) if removed else "nothing left to remove"))
    return 0


def cmd_recover(args: argparse.Namespace) -> int:
    decide = Decisions(repo_of(args))
    if args.recheck:
        packet = decide.run(decide.recheck(args.lane_id))
        code = 0 if packet.ok else 1
        if args.json:
            return _json({"id": args.lane_id, "action": "recheck", **_gates(packet)}, code)
        print(f"{args.lane_id}: gates {packet.gates_status}, next: {packet.next}")
        return code
    if args.fresh and not args.relaunch:
        raise LanesError("--fresh goes with --relaunch", "`lanes-tui recover ID --relaunch --fresh`")
    if (args.note is not None or args.note_file is not None) and not args.relaunch:
        raise LanesError("--note and --note-file go with --relaunch", "`lanes-tui recover ID --relaunch --note TEXT`")
    if args.relaunch:
        record = decide.run(decide.relaunch(args.lane_id, fresh=args.fresh, note=args.note,
                                            note_file=args.note_file))
        if args.json:
            return _json({"id": args.lane_id, "action": "relaunch", "new_id": record.id,
                          "worktree": str(record.worktree), "note": record.lead_note})
        voice.note(f"relaunched {args.lane_id} as {record.id} in {record.worktree}")
        print(record.id)
        return 0
    if decide.run(decide.wake(args.lane_id)):
        if args.json:
            return _json({"id": args.lane_id, "action": "wake"})
        print(f"{args.lane_id} was parked; its provider starts again now")
        return 0
    findings = decide.run(decide.inspect(args.lane_id))
    if args.json:
        return _json({"id": args.lane_id, "action": "inspect", "findings": dataclasses.asdict(findings),
                      "lines": findings.describe()})
    print("\n".join(findings.describe()))
    return 0


def cmd_finish(args: argparse.Namespace) -> int:
    """Exit 1 when anything is left over or the push failed (docs/decisions.md, "finish")."""
    repo = repo_of(args)
    config = load_config(repo)
    branch = programme_branch(repo, config)
    if args.watch:  # refused before anything is touched
        check_watch_options(args.timeout, args.interval)
        if not args.pr:
            raise LanesError("--watch follows the pull request --pr opens", "add --pr, or run `lanes-tui ci`")
    if args.pr:
        check_gh(repo)  # refused before anything is touched
    watched = [] if args.no_push else git_watch_warnings(repo)
    if watched and not args.push_anyway:  # refused before anything is touched, like a missing gh
        raise LanesError("finish will not push: " + "; ".join(watched),
                         "look at it (`git log`, `git config --get-regexp '^remote\\.'`); restore it, or confirm it is "
                         "yours with `lanes-tui finish --push-anyway`")
    if watched:
        for line in confirm_git_watch(repo):
            print(f"confirmed: {line}")
    decide = Decisions(repo, config)
    report = decide.run(decide.finish())
    held = "--no-push given" if args.no_push else report.push_held(push_anyway=args.push_anyway)
    where = None if held or branch in config.lanes.protected_branches else push_url(repo, branch)
    if where is not None and not args.json:
        voice.note(f"pushing {branch} to {where}")  # where it goes, before it goes
    pushed = None if held else push_branch(repo, branch, protected=set(config.lanes.protected_branches),
                                           hooks=trusted_hooks(repo))
    pr = open_pr(repo, branch) if args.pr and (args.no_push or (pushed is not None and pushed.ok)) else None
    code = 1 if report.leftovers or (pushed is not None and not pushed.ok) else 0
    reason = held or (pushed.reason if pushed is not None else "")
    if args.json:
        ci_code, ci = watch(repo, pr, timeout_s=args.timeout, interval_s=args.interval, out=sys.stderr) \
            if args.watch and pr is not None else (0, None)  # `lanes-tui ci` on the new PR, its lines on stderr
        push = None if pushed is None else {"branch": branch, "upstream": pushed.upstream.name if pushed.upstream
                                            else None, "status": pushed.status, "detail": pushed.detail,
                                            "line": pushed.line(), "url": where}
        leftovers = [{"kind": left.kind, "id": left.lane_id, "path": str(left.path) if left.path else None,
                      "fix": left.fix, "branch": left.branch} for left in report.leftovers]
        return _json({"removed": list(report.removed), "lanes": [lane.to_json() for lane in report.lanes],
                      "leftovers": leftovers, "deleted": list(report.deleted), "push": push,
                      "pushed": pushed is not None and pushed.status == "pushed", "push_reason": reason, "pr": pr,
                      **({"ci": ci} if ci is not None else {})}, max(code, ci_code))
    _print_removed(report)
    for left in report.leftovers:
        print(f"{left.kind:<9} {left.lane_id:<28} {left.path or left.branch}  → {left.fix}")
    if not report.removed and not report.leftovers:
        print("nothing to finish")
    if report.leftovers:
        print(f"LEFTOVERS: {len(report.leftovers)}")
    print(pushed.line() if pushed is not None and pushed.status != "skipped" else f"NOT-PUSHED: {reason}")
    if pr is not None:
        print(f"PR {pr}")
    if args.watch and pr is not None:  # `lanes-tui ci` on the PR just opened
        code = max(code, watch(repo, pr, timeout_s=args.timeout, interval_s=args.interval)[0])
    return code


def _print_removed(report: FinishReport) -> None:
    """Each lane finish cleaned up and why, then what went (`removed worktree …`, `removed branch …`)."""
    grouped = {item for lane in report.lanes for item in lane.items}
    for lane in report.lanes:
        print(lane.line())
        for item in lane.items:
            print(f"  removed {item}")
    for item in report.removed:
        if item not in grouped:
            print(f"removed {item}")


def cmd_diff(args: argparse.Namespace) -> int:
    """`diff ID [--stat | --json]`: read-only; the unified diff by default."""
    repo = repo_of(args)
    found = lane_diff(repo, load_config(repo), args.lane_id)
    if args.json:
        print(json.dumps(found.to_json(), indent=2))
    elif args.stat:
        print("\n".join(found.stat_lines()))
    elif found.files:
        sys.stdout.write(found.text())
    else:
        print(f"lanes-tui: {args.lane_id} has no changes against its base {found.base_sha[:10]}", file=sys.stderr)
    return 0
