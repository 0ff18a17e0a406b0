"""Headless lane subcommands: init, run, status (PRODUCT.md, "Command line").

`wait` is in `wait` and `doctor` in `config`; `repo_of` here is shared by every command module.
"""

from __future__ import annotations

import argparse
import json
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from lanes_tui.app.cli import args as cli_args
from lanes_tui.app.cli import voice
from lanes_tui.engine import (
    MAX_PLAN_BYTES,
    MAX_PROMPT_BYTES,
    Config,
    LaneRecord,
    LanesError,
    LaunchRequest,
    StatePaths,
    check_prompt,
    describe_limit,
    find_repo_root,
    gate_runner_problems,
    git_watch_warnings,
    install_pre_push,
    lane_statuses,
    launch_group,
    launch_lane,
    load_config,
    parse_bytes,
    parse_percent,
    phase_prompt,
    read_text_file,
    repository_file,
    scope_problem,
    stuck_accepts,
    write_default_config,
)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("init", help="write .lanes/config.toml with commented defaults")
    p.add_argument("--force", action="store_true", help="overwrite an existing config (with --hooks: the hook)")
    p.add_argument("--hooks", action="store_true",
                   help="install a pre-push hook that runs the gates before the programme branch is pushed "
                        "(instead of writing the config)")
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
    caps.add_argument("--allow-uncontained", action="store_true",
                      help="run even where the kernel cannot confine the lane's writes to its worktree (no "
                           "Landlock); the lane's record says it ran uncontained")
    limits = p.add_argument_group("time limits for this lane (over [lanes] timeout_s / idle_timeout_s)")
    limits.add_argument("--timeout", type=cli_args.seconds, metavar="S",
                        help="wall-clock limit of each provider run, in seconds")
    limits.add_argument("--idle-timeout", type=cli_args.seconds, metavar="S",
                        help="the lane stalls after this long without activity (0: no stall watchdog)")
    p.add_argument("--json", action="store_true", help="one JSON object: the lanes started and their group")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("status", help="lanes and their state")
    p.add_argument("lane_id", nargs="?", help="one lane")
    p.add_argument("--json", action="store_true", help="a JSON list of lane objects")
    p.set_defaults(func=cmd_status)


def repo_of(args: argparse.Namespace) -> Path:
    start = args.repo if getattr(args, "repo", None) else Path.cwd()
    if not Path(start).is_dir():
        raise LanesError(f"--repo {start} is not a directory", "pass the path of a git repository")
    return find_repo_root(Path(start))


def cmd_init(args: argparse.Namespace) -> int:
    if args.hooks:
        print(f"wrote {install_pre_push(repo_of(args), force=args.force)}")
        return 0
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
        source = repository_file(args.prompt_file, repo, "--prompt-file",
                                 "copy the file into the repository, or give the text with --prompt")
        prompt = check_prompt(read_text_file(source, MAX_PROMPT_BYTES, "--prompt-file"),
                              f"--prompt-file {args.prompt_file}")
    else:
        prompt = check_prompt(args.prompt, "--prompt")
    _check_state_writable(StatePaths(repo))
    if config.runner.kind == "local":  # a warning, not a refusal: a `[lanes] setup` step may make the venv
        for line in gate_runner_problems(repo, config.gates):
            print(f"lanes-tui: WARNING: gates: {line}", file=sys.stderr)
    if args.best_of is not None or args.providers is not None:
        return _run_best_of(args, repo, config, prompt)
    request = LaunchRequest(prompt=prompt, task_type=args.task_type, lane=args.lane, slug=args.slug,
                            allow_load=args.allow_load, raw=args.raw, caps=_run_caps(args),
                            scope=_run_scope(args.scope))
    if config.runner.kind == "local":
        record = launch_lane(repo, config, request)
    else:  # on a cluster node, through the runner (Ray is imported only here, only for kind = "ray")
        from lanes_tui.app.cli.remote import start_remote

        record = start_remote(repo, config, request)
    if args.json:
        return _print_started([record], None)
    where = f"{record.node}:{record.worktree}" if record.node else record.worktree
    voice.note(f"started lane {record.id} in {where} (chain: {' → '.join(record.chain)})")
    print(record.id)
    return 0


def _print_started(records: list[LaneRecord], group: str | None) -> int:
    """`run --json`: the same shape for one lane and a best-of group (docs/cli.md)."""
    print(json.dumps({"lanes": [{"id": r.id, "worktree": str(r.worktree), "branch": r.branch, "chain": list(r.chain)}
                                for r in records], "group": group}, indent=2))
    return 0


def _run_best_of(args: argparse.Namespace, repo: Path, config: Config, prompt: str) -> int:
    """`run --best-of N [--providers a,b,c]`: N lanes under one group; the group line is printed last."""
    if args.best_of is None:
        raise LanesError("--providers goes with --best-of N", "add --best-of N, or use --lane PROVIDER for one lane")
    if args.lane is not None:
        raise LanesError("--best-of and --lane do not go together", "name the lanes' providers with --providers a,b,c")
    if config.runner.kind != "local":
        raise LanesError(f"run --best-of runs on this machine only, and [runner] kind is {config.runner.kind!r}",
                         "start the lanes one by one (`lanes-tui run --prompt …` each), or set kind = \"local\"")
    providers = [name.strip() for name in (args.providers or "").split(",")] if args.providers is not None else []
    if "" in providers:
        raise LanesError(f"--providers {args.providers!r} has an empty name", "list providers as a,b,c")
    launched = launch_group(repo, config, LaunchRequest(prompt=prompt, task_type=args.task_type, slug=args.slug,
                                                        allow_load=args.allow_load, raw=args.raw,
                                                        caps=_run_caps(args), scope=_run_scope(args.scope)),
                            args.best_of, providers)
    if args.json:
        return _print_started(list(launched.lanes), launched.group)
    for record in launched.lanes:
        voice.note(f"started lane {record.id} in {record.worktree} (chain: {' → '.join(record.chain)})")
    if voice.level() == voice.QUIET:  # the ids alone, one a line, as one lane's `run -q` prints its id
        print("\n".join(r.id for r in launched.lanes))
        return 0
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
    if args.allow_uncontained:
        caps["allow_uncontained"] = True
    if args.timeout is not None:  # kept with the caps: `recover --relaunch` keeps them too
        if args.timeout == 0:
            raise LanesError("--timeout 0 would stop every run at once", "give the wall-clock limit in seconds")
        caps["timeout_s"] = args.timeout
    if args.idle_timeout is not None:
        caps["idle_timeout_s"] = args.idle_timeout
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
    """The lanes, always; exit 1 (and one stderr line) when the config cannot be read (docs/cli.md)."""
    repo = repo_of(args)
    rows = statuses(repo, args.lane_id)
    # An accept journal reconcile could not finish: named with its fix, never blocking the rest.
    stuck = [f"PROBLEM: {s.describe()}" for s in stuck_accepts(repo)]
    # The target moved without an accept, a remote or branch key changed (git.watch): on every row
    # (the list stays the contract), and as WARNING lines.
    watched = git_watch_warnings(repo)
    for row in rows if watched else ():  # the key only when there is something to say
        row["git_watch"] = list(watched)
    stuck += [f"WARNING: {line} (`lanes-tui finish` refuses to push until `--push-anyway`)" for line in watched]
    broken = config_problem(repo)
    if args.json:
        print(json.dumps(rows, indent=2))
        for line in stuck:  # on stderr: stdout stays the JSON list scripts parse
            print(f"lanes-tui: {line}", file=sys.stderr)
    elif not rows:
        voice.note("no lanes yet: start one with `lanes-tui run --prompt TEXT`")
        for line in stuck:
            print(line)
    else:
        _print_rows(rows)
        for line in stuck:
            print(line)
    if broken is not None:  # after the lanes, so the last line a lead sees is the one to act on
        print(f"lanes-tui: {broken}", file=sys.stderr)
        return 1
    return 0


def config_problem(repo: Path) -> str | None:
    """The config's problem as one line (the file, the line, what and the fix), or None when it reads.

    `status` lists lanes from their records alone, so a config that `run`, `check` and `accept` refuse
    went unnoticed there; it is said here, once, without hiding a single lane.
    """
    try:
        load_config(repo)
    except LanesError as exc:
        return f"PROBLEM: the config cannot be read, so run, check and accept refuse: {exc}"
    return None


def _print_rows(rows: list[dict[str, Any]]) -> None:
    print(f"{'LANE':<28} {'STATE':<10} {'RESULT':<15} {'PROVIDER':<10} {'IDLE':>6} {'CPU%':>6} {'RSS':>8}")
    for row in rows:
        idle = "" if row["idle_s"] is None else f"{row['idle_s']:.0f}s"
        rss = f"{row['rss_bytes'] / 1e6:.0f}M" if row["rss_bytes"] else ""
        # A lane whose record cannot be read shows as `corrupt` here (its JSON state stays a contract one).
        state = "corrupt" if row.get("problem") and row["state"] == "lost" else row["state"]
        print(f"{row['id']:<28} {state:<10} {row['result'] or '':<15} {row['provider'] or '':<10} "
              f"{idle:>6} {row['cpu_percent'] or 0:>6.1f} {rss:>8}" + _group_tag(row) + _node_tag(row))
        if row.get("problem"):
            print(f"  problem: {row['problem']}")
        elif row.get("state_reason"):
            voice.detail(f"  why: {row['state_reason']}")


def _group_tag(row: dict[str, Any]) -> str:
    """`  g:bo-fix-login-3f9a… #1` for a best-of lane (`#-` until its whole group has ended); "" for others."""
    group = row.get("group")
    if not group:
        return ""
    short = group if len(group) <= 24 else group[:23] + "…"
    return f"  g:{short} #{row.get('rank') or '-'}"


def _node_tag(row: dict[str, Any]) -> str:
    """`  @host` for a lane on a cluster node (its hostname; `--json` has the node id too); "" for a local one."""
    node = row.get("node")
    if row.get("runner", "local") == "local" or not isinstance(node, str) or not node:
        return ""
    return f"  @{node.split(' (', 1)[0]}"
