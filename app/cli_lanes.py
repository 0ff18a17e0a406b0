"""Headless lane subcommands: init, run, status, wait, doctor (PRODUCT.md, "Command line")."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lanes_tui.app import cli_args
from lanes_tui.engine import (
    MAX_PLAN_BYTES,
    MAX_PROMPT_BYTES,
    SETTLED_STATES,
    STATES,
    Config,
    LanesError,
    LaunchRequest,
    StatePaths,
    check_capped,
    check_prompt,
    describe_heavy_slots,
    describe_limit,
    detect_containment,
    find_repo_root,
    governor_summary,
    lane_caps,
    lane_settled,
    lane_statuses,
    launch_group,
    launch_lane,
    load_config,
    parse_bytes,
    parse_percent,
    passed_env_names,
    phase_prompt,
    read_lane,
    read_text_file,
    reconcile,
    scope_problem,
    stuck_accepts,
    write_default_config,
)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("init", help="write .lanes/config.toml with commented defaults")
    p.add_argument("--force", action="store_true", help="overwrite an existing config")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("run", help="start a lane (detached) and print its id")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", help="the task as text")
    src.add_argument("--prompt-file", type=Path, help="the task from a file")
    src.add_argument("--plan", type=Path, help="a plan file with '## Phase N' blocks (with --phase)")
    p.add_argument("--phase", help="the phase of --plan to run")
    p.add_argument("--type", default="backend", dest="task_type", help="task type (default: backend)")
    p.add_argument("--lane", help="provider to try first (moved to the front of the chain)")
    p.add_argument("--id", dest="slug", help="the task slug; the lane id is <slug>-a<attempt>")
    p.add_argument("--best-of", type=int, metavar="N",
                   help="start N lanes (2-8) on the task as one group, ranked when all have ended (<slug>-bI-a1)")
    p.add_argument("--providers", metavar="A,B,C",
                   help="with --best-of: the lanes' providers, round-robin (default: the task type's chain)")
    p.add_argument("--allow-load", action="store_true",
                   help="allow a prompt that asks to stress, load-test or benchmark the machine")
    p.add_argument("--raw", action="store_true",
                   help="send the prompt alone, without the preamble and .lanes/rules.md (docs/lanes.md)")
    p.add_argument("--scope", action="append", default=[], metavar="PATH",
                   help="a file (or a folder ending in /) this lane owns; repeat it. Accept refuses changes "
                        "outside the scope, and plans do not start a ticket whose files a lane owns")
    caps = p.add_argument_group("caps for this lane (over [lanes] of the config; docs/governor.md)")
    caps.add_argument("--cpu", metavar="PERCENT", help="CPU cap in percent of one core, e.g. 150%% (0 or off: none)")
    caps.add_argument("--memory", metavar="SIZE", help="memory cap, e.g. 4G or 512M (0 or off: none)")
    caps.add_argument("--pids", type=cli_args.count, metavar="N", help="most processes at once (0: no cap)")
    caps.add_argument("--max-cost", type=cli_args.dollars, metavar="USD",
                      help="spend cap: at this cost the lane pauses and asks you (0: none)")
    caps.add_argument("--max-tokens", type=cli_args.count, metavar="N",
                      help="token cap: at this many tokens the lane pauses and asks you (0: none)")
    caps.add_argument("--allow-uncapped", action="store_true",
                      help="run even when no mechanism holds the lane's memory, or its memory cap is off")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("status", help="lanes and their state")
    p.add_argument("lane_id", nargs="?", help="one lane")
    p.add_argument("--json", action="store_true", help="a JSON list of lane objects")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("wait", help="block until a lane reaches one of the given states")
    p.add_argument("lane_id")
    p.add_argument("--until", default=None,
                   help="comma-separated states (default: settled: ready, rejected, stalled, exited, … with "
                        "its supervisor finished)")
    p.add_argument("--timeout", type=float, default=None, help="seconds; exit 2 when it passes")
    p.set_defaults(func=cmd_wait)

    p = sub.add_parser("doctor", help="providers, config problems, stale state")
    p.set_defaults(func=cmd_doctor)


def repo_of(args: argparse.Namespace) -> Path:
    start = args.repo if getattr(args, "repo", None) else Path.cwd()
    if not Path(start).is_dir():
        raise LanesError(f"--repo {start} is not a directory", "pass the path of a git repository")
    return find_repo_root(Path(start))


def cmd_init(args: argparse.Namespace) -> int:
    path = write_default_config(repo_of(args), force=args.force)
    print(f"wrote {path}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    config = load_config(repo)
    if args.plan is not None:
        if not args.phase:
            raise LanesError("--plan needs --phase N", "name the phase to run, e.g. --phase 2")
        _check_plan_file(args.plan)
        prompt = check_prompt(phase_prompt(args.plan, args.phase), f"phase {args.phase} of {args.plan}")
    elif args.prompt_file is not None:
        prompt = check_prompt(read_text_file(args.prompt_file, MAX_PROMPT_BYTES, "--prompt-file"),
                              f"--prompt-file {args.prompt_file}")
    else:
        prompt = check_prompt(args.prompt, "--prompt")
    _check_state_writable(StatePaths(repo))
    if args.best_of is not None or args.providers is not None:
        return _run_best_of(args, repo, config, prompt)
    record = launch_lane(repo, config, LaunchRequest(prompt=prompt, task_type=args.task_type,
                                                     lane=args.lane, slug=args.slug,
                                                     allow_load=args.allow_load, raw=args.raw,
                                                     caps=_run_caps(args), scope=_run_scope(args.scope)))
    print(f"started lane {record.id} in {record.worktree} (chain: {' → '.join(record.chain)})")
    print(record.id)
    return 0


def _run_best_of(args: argparse.Namespace, repo: Path, config: Config, prompt: str) -> int:
    """`run --best-of N [--providers a,b,c]`: N lanes under one group; the group line is printed last."""
    if args.best_of is None:
        raise LanesError("--providers goes with --best-of N", "add --best-of N, or use --lane PROVIDER for one lane")
    if args.lane is not None:
        raise LanesError("--best-of and --lane do not go together", "name the lanes' providers with --providers a,b,c")
    providers = [name.strip() for name in (args.providers or "").split(",")] if args.providers is not None else []
    if "" in providers:
        raise LanesError(f"--providers {args.providers!r} has an empty name", "list providers as a,b,c")
    launched = launch_group(repo, config, LaunchRequest(prompt=prompt, task_type=args.task_type, slug=args.slug,
                                                        allow_load=args.allow_load, raw=args.raw,
                                                        caps=_run_caps(args), scope=_run_scope(args.scope)),
                            args.best_of, providers)
    for record in launched.lanes:
        print(f"started lane {record.id} in {record.worktree} (chain: {' → '.join(record.chain)})")
    print(f"best-of group {launched.group}: {' '.join(r.id for r in launched.lanes)}")
    return 0


def _run_scope(entries: list[str]) -> tuple[str, ...]:
    """`--scope` paths, each checked as a plan ticket's scope is (relative, inside, no globs)."""
    for entry in entries:
        problem = scope_problem(entry)
        if problem is not None:
            raise LanesError(f"--scope: {problem[0]}", problem[1])
    return tuple(entries)


def _run_caps(args: argparse.Namespace) -> dict[str, Any]:
    """The caps given on the command line, checked now (one line naming the flag), kept as written."""
    caps: dict[str, Any] = {}
    if args.cpu is not None:
        parse_percent(args.cpu, "--cpu")
        caps["cpu"] = args.cpu
    if args.memory is not None:
        parse_bytes(args.memory, "--memory")
        caps["memory"] = args.memory
    for key, value in (("pids", args.pids), ("max_cost_usd", args.max_cost), ("max_tokens", args.max_tokens)):
        if value is not None:
            caps[key] = value
    if args.allow_uncapped:
        caps["allow_uncapped"] = True
    return caps


def _check_plan_file(plan: Path) -> None:
    """A plan is read whole by `phase_prompt`: refuse a device, a pipe or a huge file before that."""
    try:
        info = plan.stat()
    except OSError as exc:
        raise LanesError(f"cannot read plan file {plan}: {exc.strerror}", "give the path of a plan file") from None
    if not stat.S_ISREG(info.st_mode):
        raise LanesError(f"plan file {plan} is not a regular file", "give the path of a plan file")
    if info.st_size > MAX_PLAN_BYTES:
        raise LanesError(f"plan file {plan} is larger than the limit of {describe_limit(MAX_PLAN_BYTES)}",
                         "split it into smaller plans")


def _check_state_writable(paths: StatePaths) -> None:
    """One line before anything is created, instead of a worktree made and undone for nothing.

    Probes the nearest folder that exists on the way to `.lanes/state/lanes` (creating nothing).
    """
    folder = next(p for p in (paths.lanes, paths.state, paths.lanes_dir, paths.repo) if p.is_dir())
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        where = folder
        raise LanesError(f"the state folder is not writable: {where}: {exc.strerror}",
                         f"give yourself write access (chmod u+rwx {paths.state}) or free some space") from None


def statuses(repo: Path, lane_id: str | None = None) -> list[dict[str, Any]]:
    return [status.to_json() for status in lane_statuses(repo, lane_id)]


def cmd_status(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    rows = statuses(repo, args.lane_id)
    # An accept journal reconcile could not finish: named with its fix, never blocking the rest.
    stuck = [f"PROBLEM: {s.describe()}" for s in stuck_accepts(repo)]
    if args.json:
        print(json.dumps(rows, indent=2))
        for line in stuck:  # on stderr: stdout stays the JSON list scripts parse
            print(f"lanes-tui: {line}", file=sys.stderr)
        return 0
    if not rows:
        print("no lanes yet: start one with `lanes-tui run --prompt TEXT`")
        return 0
    print(f"{'LANE':<28} {'STATE':<10} {'RESULT':<15} {'PROVIDER':<10} {'IDLE':>6} {'CPU%':>6} {'RSS':>8}")
    for row in rows:
        idle = "" if row["idle_s"] is None else f"{row['idle_s']:.0f}s"
        rss = f"{row['rss_bytes'] / 1e6:.0f}M" if row["rss_bytes"] else ""
        # A lane whose record cannot be read shows as `corrupt` here (its JSON state stays a contract one).
        state = "corrupt" if row.get("problem") else row["state"]
        print(f"{row['id']:<28} {state:<10} {row['result'] or '':<15} {row['provider'] or '':<10} "
              f"{idle:>6} {row['cpu_percent'] or 0:>6.1f} {rss:>8}" + _group_tag(row))
        if row.get("problem"):
            print(f"  problem: {row['problem']}")
    for line in stuck:
        print(line)
    return 0


def _group_tag(row: dict[str, Any]) -> str:
    """`  g:bo-fix-login-3f9a… #1` for a best-of lane (`#-` until its whole group has ended); "" for others."""
    group = row.get("group")
    if not group:
        return ""
    short = group if len(group) <= 24 else group[:23] + "…"
    return f"  g:{short} #{row.get('rank') or '-'}"


def cmd_wait(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    settled = args.until is None
    wanted = set(SETTLED_STATES) if settled else {s.strip() for s in args.until.split(",") if s.strip()}
    unknown = wanted - set(STATES)
    if unknown:
        raise LanesError(f"unknown state(s) in --until: {', '.join(sorted(unknown))}",
                         f"use some of: {' '.join(STATES)}")
    read_lane(repo, args.lane_id, reconciled=False)
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    while True:
        record = read_lane(repo, args.lane_id)
        # `exited` and `stalled` are on the way to a packet while the supervisor still runs.
        if (lane_settled(repo, record) if settled else record.state in wanted):
            print(f"{record.id} {record.state} {record.result or ''}".rstrip())
            return 0
        if deadline is not None and time.monotonic() >= deadline:
            print(f"lanes-tui: {record.id} is still {record.state} after {args.timeout:g}s", file=sys.stderr)
            return 2
        time.sleep(0.1)


def cmd_doctor(args: argparse.Namespace) -> int:
    repo = repo_of(args)
    problems = 0
    try:
        config = load_config(repo)
    except LanesError as exc:
        print(f"config: PROBLEM {exc}")
        return 1
    print(f"config: {config.path or 'defaults (no .lanes/config.toml; `lanes-tui init` writes one)'}")
    print(f"containment: {detect_containment().describe()}")
    for cap in governor_summary(config):  # which mechanism enforces which cap on this machine
        print(f"cap {cap['cap']:<8} {cap['value']:<12} {cap['mechanism']}")
    try:
        check_capped(lane_caps(config.lanes))
    except LanesError as exc:
        problems += 1
        print(f"PROBLEM: caps: {exc}")
    try:
        print(f"heavy slots: {describe_heavy_slots(os.environ, Path.cwd(), repo)}")
    except LanesError as exc:
        problems += 1
        print(f"PROBLEM: heavy slots: {exc}")
    for name, provider in sorted(config.providers.items()):
        exe = provider.executable()
        found = shutil.which(exe) if os.sep not in exe else (exe if os.access(exe, os.X_OK) else None)
        print(f"provider {name:<8} {'ok' if found else 'missing':<8} {found or exe}")
    # What each lane would receive from this environment: names only, never a value.
    base = passed_env_names(os.environ)
    print(f"env (every lane and gate, names only): {', '.join(base) or 'nothing'}; plus its own LANES_*")
    for name, allow in [*sorted((n, p.env) for n, p in config.providers.items()), ("gates", config.gates.env)]:
        extra = [var for var in passed_env_names(os.environ, allow) if var not in base]
        print(f"env {name:<8} + {', '.join(extra) or 'nothing more'}"
              + (f"  (allows {', '.join(allow)})" if allow else ""))
    used = {p for chain in config.chains.values() for p in chain}
    for name in sorted(used):
        exe = config.providers[name].executable()
        if shutil.which(exe) is None and not os.access(exe, os.X_OK):
            problems += 1
            print(f"PROBLEM: chain provider {name!r} is not installed ({exe} not on PATH)")
    for lane_id in StatePaths(repo).lane_ids():
        try:
            read_lane(repo, lane_id, reconciled=False)
        except LanesError as exc:
            problems += 1
            print(f"PROBLEM: {exc}")
    for change in reconcile(repo):
        print(f"stale: {change.lane_id} was {change.before}, now {change.after} ({change.reason})")
    for stuck in stuck_accepts(repo):
        problems += 1
        print(f"PROBLEM: {stuck.describe()}")
    for row in statuses(repo):
        if row.get("problem"):  # a corrupt record: already a PROBLEM above, with its fix
            continue
        if row["state"] == "lost":
            print(f"lost lane {row['id']}: `lanes-tui recover {row['id']}`")
        if row["state"] not in ("accepted", "abandoned") and not Path(row["worktree"]).exists():
            problems += 1
            print(f"PROBLEM: worktree of {row['id']} is missing: {row['worktree']}")
    print(f"{problems} problem(s)")
    return 1 if problems else 0
