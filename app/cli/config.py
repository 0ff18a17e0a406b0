"""What the config says and what the machine has: `providers`, `show-chain TYPE` and `doctor`.

The config is read from layers (the lead's own file under the repository's, `config.layers`), so "which
model will this lane use, and who set it?" has no answer in any one file: `providers` shows every
provider's effective values with the file each came from, and `show-chain` the providers a task type
tries, in order. `doctor` checks the machine against that config. Each has `--json` with the shape
documented in docs/cli.md; the text forms are for reading and may change.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from lanes_tui.app.cli.lanes import repo_of, statuses
from lanes_tui.engine import (
    PRESETS,
    Config,
    LanesError,
    StatePaths,
    check_capped,
    describe_confinement,
    describe_gates,
    describe_heavy_slots,
    describe_watch_limit,
    detect_containment,
    gate_runner_problems,
    gemini_setup_problems,
    git_watch_warnings,
    governor_summary,
    is_gemini,
    lane_caps,
    load_config,
    passed_env_names,
    provider_family,
    read_lane,
    read_layers,
    reconcile,
    refused_providers,
    stuck_accepts,
)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("providers", help="the effective provider table and where each value came from")
    p.add_argument("name", nargs="?", help="one provider (default: all)")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md)")
    p.set_defaults(func=cmd_providers)

    p = sub.add_parser("show-chain", help="the providers a task type tries, in order, with family, model and max")
    p.add_argument("task_type", metavar="TYPE", help="a task type: backend, hard, ui, tests, docs or one of [chains]")
    p.add_argument("--lane", metavar="PROVIDER", help="as `run --lane PROVIDER` would reorder it")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md)")
    p.set_defaults(func=cmd_show_chain)

    p = sub.add_parser("doctor", help="providers, config problems, stale state")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md); the exit code is the same")
    p.set_defaults(func=cmd_doctor)


# --- providers ------------------------------------------------------------------------------------

def provider_table(repo: Path) -> dict[str, Any]:
    """`providers --json`: the files read, and every provider's values with where each was set."""
    layers = read_layers(repo)
    config = load_config(repo)
    files = [{"layer": layer.kind, "path": str(layer.path)} for layer in layers.layers]
    rows = []
    for name, provider in sorted(config.providers.items()):
        values: dict[str, Any] = {}
        for spec in dataclasses.fields(provider):
            if spec.name == "name":
                continue
            layer = layers.origin(f"providers.{name}.{spec.name}")
            source = layer.kind if layer is not None else ("preset" if name in PRESETS else "default")
            values[spec.name] = {"value": _plain(getattr(provider, spec.name)), "from": source,
                                 "path": str(layer.path) if layer is not None else None}
        rows.append({"name": name, "family": provider_family(provider), "values": values,
                     "chains": [t for t, chain in config.chains.items() if name in chain]})
    return {"files": files, "providers": rows}


def _plain(value: Any) -> Any:
    """A config value as JSON has it: tuples become lists."""
    return list(value) if isinstance(value, tuple) else value


def cmd_providers(args: argparse.Namespace) -> int:
    table = provider_table(repo_of(args))
    if args.name is not None:
        known = [row["name"] for row in table["providers"]]
        if args.name not in known:
            raise LanesError(f"unknown provider {args.name!r}", f"use one of {', '.join(known)}")
        table["providers"] = [row for row in table["providers"] if row["name"] == args.name]
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    for layer in table["files"] or [{"layer": "none", "path": "no config file: presets and defaults only"}]:
        print(f"{layer['layer']:<8} {layer['path']}")
    for row in table["providers"]:
        print(f"\n{row['name']}  (family {row['family']}; chains: {', '.join(row['chains']) or 'none'})")
        for key, item in row["values"].items():
            where = item["from"] if item["path"] is None else f"{item['from']} {item['path']}"
            print(f"  {key:<16} {json.dumps(item['value'])[:90]:<60}  {where}")
    return 0


# --- show-chain -----------------------------------------------------------------------------------

def chain_report(config: Config, task_type: str, lane: str | None = None) -> dict[str, Any]:
    """`show-chain --json`: the task type, and each provider as a lane tries them."""
    chain = config.chain_for(task_type, lane)
    steps = []
    for position, name in enumerate(chain, start=1):
        provider = config.provider(name)
        exe = provider.executable()
        steps.append({"position": position, "provider": name, "family": provider_family(provider),
                      "model": provider.model, "max": provider.max, "channel": provider.channel,
                      "installed": _found(exe) is not None})
    return {"task_type": task_type, "chain": steps}


def cmd_show_chain(args: argparse.Namespace) -> int:
    report = chain_report(load_config(repo_of(args)), args.task_type, args.lane)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['task_type']}: {' → '.join(step['provider'] for step in report['chain'])}")
    for step in report["chain"]:
        print(f"  {step['position']}. {step['provider']:<10} family {step['family']:<10} "
              f"model {step['model'] or '(its own default)':<24} max {step['max']} attempt(s)"
              + ("" if step["installed"] else "  (not installed)"))
    return 0


# --- doctor ---------------------------------------------------------------------------------------

def _found(exe: str) -> str | None:
    """Where `exe` is (PATH lookup, or the path itself when it names one), or None."""
    if os.sep in exe:
        return exe if os.access(exe, os.X_OK) else None
    return shutil.which(exe) if exe else None


def doctor_report(repo: Path) -> dict[str, Any]:
    """Everything `doctor` checks, as `doctor --json` prints it; `problems` empty means exit 0."""
    problems: list[str] = []
    try:
        config = load_config(repo)
    except LanesError as exc:
        return {"config": {"files": [], "problem": str(exc)}, "problems": [f"config: {exc}"]}
    report: dict[str, Any] = {"config": {"files": [str(p) for p in config.files], "problem": None},
                              "containment": detect_containment().describe(), "caps": governor_summary(config)}
    try:
        check_capped(lane_caps(config.lanes))
    except LanesError as exc:
        problems.append(f"caps: {exc}")
    # The kernel's fence round each lane's writes (`lanes.confine`): what is in force, what each may write.
    report["confinement"] = {"mechanism": describe_confinement(), "allow_uncontained": config.lanes.allow_uncontained,
                             "writable": {name: list(p.writable) for name, p in sorted(config.providers.items())
                                          if p.writable} | {"gates": list(config.gates.writable)}}
    if report["confinement"]["mechanism"].startswith("none") and not config.lanes.allow_uncontained:
        problems.append(f"confinement: {report['confinement']['mechanism']}: `run` refuses lanes here; "
                        "allow them with --allow-uncontained or [lanes] allow_uncontained = true")
    try:
        report["heavy_slots"] = describe_heavy_slots(os.environ, Path.cwd(), repo)
    except LanesError as exc:
        report["heavy_slots"] = None
        problems.append(f"heavy slots: {exc}")
    report["providers"] = [{"name": name, "installed": _found(p.executable()) is not None,
                            "path": _found(p.executable()) or p.executable()}
                           for name, p in sorted(config.providers.items())]
    # What each lane would receive from this environment: names only, never a value.
    base = passed_env_names(os.environ)
    extra = {name: [var for var in passed_env_names(os.environ, allow) if var not in base]
             for name, allow in [*sorted((n, p.env) for n, p in config.providers.items()), ("gates", config.gates.env)]}
    allows = {**{n: list(p.env) for n, p in config.providers.items()}, "gates": list(config.gates.env)}
    report["env"] = {"base": base, "extra": extra, "allows": allows}
    report["inotify"] = describe_watch_limit()  # the lanes' file watcher shares this per-user limit
    report["gates"] = describe_gates(repo, config.gates)  # the venv and each step, detected or configured
    problems.extend(f"gates: {line}" for line in gate_runner_problems(repo, config.gates))  # pytest missing, …
    report["runner"] = runner_report(repo, config)
    if report["runner"]["problem"] is not None:
        problems.append(f"runner: {report['runner']['problem']}")
    problems.extend(f"runner: {check['check']}: {check['detail']}" for check in report["runner"]["checks"]
                    if not check["ok"])
    # On a cluster the agents run on the nodes: a CLI missing here is no problem for them (the provider
    # lines still show this machine, for `review` and for lanes run locally again).
    chained = sorted({p for chain in config.chains.values() for p in chain}) if config.runner.kind == "local" else []
    for name in chained:
        exe = config.providers[name].executable()
        if _found(exe) is None:
            problems.append(f"chain provider {name!r} is not installed ({exe} not on PATH)")
        elif is_gemini([exe]):  # trust, approval mode and auth: each would end every lane at once
            argv, allow = config.providers[name].argv, config.providers[name].env
            lane_env = {k: os.environ[k] for k in passed_env_names(os.environ, allow)}
            problems.extend(f"chain provider {name!r}: {p}" for p in gemini_setup_problems(argv, lane_env, Path.home()))
    remote_lanes: set[str] = set()  # their worktree is on a node, never on this machine
    last_runs: dict[str, tuple[float, str, Any]] = {}  # provider -> its last run anywhere: (ended, lane, attempt)
    for lane_id in StatePaths(repo).lane_ids():
        try:
            lane = read_lane(repo, lane_id, reconciled=False)
        except LanesError as exc:
            problems.append(str(exc))
            continue
        if lane.runner != "local":
            remote_lanes.add(lane_id)
        for attempt in lane.providers_tried:
            if attempt.ended is not None and attempt.ended >= last_runs.get(attempt.provider, (-1.0,))[0]:
                last_runs[attempt.provider] = (attempt.ended, lane_id, attempt)
    problems.extend(refused_providers(config.providers, last_runs))
    report["stale"] = [{"lane": c.lane_id, "before": c.before, "after": c.after, "reason": c.reason}
                       for c in reconcile(repo)]
    problems.extend(stuck.describe() for stuck in stuck_accepts(repo))
    # The target branches and remotes as the first live lane found them (git.watch, docs/reliability.md).
    report["git_watch"] = git_watch_warnings(repo)
    problems.extend(f"git watch: {line}" for line in report["git_watch"])
    report["lost"] = []
    for row in statuses(repo):
        if row.get("problem"):  # a corrupt record: already a problem above, with its fix
            continue
        if row["state"] == "lost":
            report["lost"].append(row["id"])
        if (row["id"] not in remote_lanes and row["state"] not in ("accepted", "abandoned")
                and not Path(row["worktree"]).exists()):
            problems.append(f"worktree of {row['id']} is missing: {row['worktree']}")
    report["problems"] = problems
    return report


#: The fix for a Ray runner that cannot load: the extra pins the Ray every node must run too. lanes-tui is
#: installed from a checkout (it is not on PyPI), so the command is the checkout's.
RAY_FIX = "pip install -e '.[ray]' in lanes-tui's checkout, into the Python that runs it (docs/ray.md)"


def runner_report(repo: Path, config: Config) -> dict[str, Any]:
    """`doctor --json`'s `runner`: where lanes run and, for a Ray cluster, each of the runner's own checks.

    The runner comes from the engine's `make_runner`, the one place that imports the Ray runner and
    only when `[runner] kind = "ray"` asks for it: a lead on one machine never pays Ray's import (seconds,
    hundreds of MB), a lead without the extra gets its one-line refusal (with `pip install -e
    '.[ray]'`) as a problem, and a cluster that misbehaves is a problem to read, never a
    crash of the command meant to diagnose it.
    """
    settings = config.runner
    report: dict[str, Any] = {"kind": settings.kind, "address": settings.address, "remote": settings.remote,
                              "lane_slots": settings.lane_slots, "labels": dict(settings.labels),
                              "checkpoint_s": settings.checkpoint_s, "checks": [], "problem": None}
    if settings.kind == "local":
        return report
    # The runner the engine would use (`make_runner`, kept for the process: `status` and the lanes'
    # sync below share its one cluster connection), looked up only now: the local path never loads it.
    from lanes_tui.engine import Engine

    try:
        # Ray's own chatter while it connects goes to stderr: stdout stays the one JSON value of --json.
        with contextlib.redirect_stdout(sys.stderr):
            runner = Engine(repo, config=config).runner
            doctor = getattr(runner, "doctor", None)
            if not callable(doctor):
                report["problem"] = f"the {settings.kind} runner has no checks of its own — update lanes-tui"
                return report
            checks: list[tuple[str, bool, str]] = doctor()
    except LanesError as exc:  # Ray not installed: the fix is in the message
        report["problem"] = str(exc)
        return report
    except ImportError as exc:  # Ray imported later than the runner's module: the same answer
        missing = exc.name or ""
        if not (missing == "ray" or missing.startswith("ray.")):
            raise
        report["problem"] = f"[runner] kind = \"ray\" needs Ray, which is not installed here — {RAY_FIX}"
        return report
    except Exception as exc:  # a cluster's failure is the diagnosis here, whatever Ray raises for it
        report["problem"] = f"the cluster checks stopped: {type(exc).__name__}: {exc}"
        return report
    report["checks"] = [{"check": name, "ok": bool(ok), "detail": detail} for name, ok, detail in checks]
    return report


def runner_lines(runner: dict[str, Any]) -> list[str]:
    """The text form of `runner_report`: one line for where lanes run, then one per check."""
    if runner["kind"] != "ray":
        return ["runner: local — lanes run on this machine, each under its own supervisor "
                "(a Ray cluster: [runner] kind = \"ray\", docs/ray.md)"]
    labels = ", ".join(f"{key}={value}" for key, value in runner["labels"].items())
    lines = [f"runner: ray at {runner['address']}, shared remote {runner['remote']}, "
             f"{runner['lane_slots']} lane slot(s) a node, checkpoint every {runner['checkpoint_s']:g}s"
             + (f", nodes labelled {labels}" if labels else "")]
    lines += [f"runner {check['check']:<28} {'ok' if check['ok'] else 'FAILED':<7} {check['detail']}"
              for check in runner["checks"]]
    lines.append("runner: the agents run on the nodes, with their CLIs and credentials there: the provider "
                 "lines above are this machine's")
    return lines


def cmd_doctor(args: argparse.Namespace) -> int:
    report = doctor_report(repo_of(args))
    code = 1 if report["problems"] else 0
    if args.json:
        print(json.dumps(report, indent=2))
        return code
    if report["config"]["problem"] is not None:
        print(f"config: PROBLEM {report['config']['problem']}")
        return code
    files = " over ".join(reversed(report["config"]["files"]))  # the repository's file wins: it comes first
    print(f"config: {files or 'defaults (no .lanes/config.toml; `lanes-tui init` writes one)'}")
    print(f"containment: {report['containment']}")
    fence = report["confinement"]
    print(f"confinement: {fence['mechanism']}" + ("; uncontained lanes allowed" if fence["allow_uncontained"] else ""))
    print("confinement: every lane writes its worktree, its git admin folder and its own TMPDIR; besides:")
    for name, paths in fence["writable"].items():
        print(f"confinement {name:<8} + {', '.join(paths) or 'nothing more'}")
    for cap in report["caps"]:  # which mechanism enforces which cap on this machine
        print(f"cap {cap['cap']:<8} {cap['value']:<12} {cap['mechanism']}")
    if report["heavy_slots"] is not None:
        print(f"heavy slots: {report['heavy_slots']}")
    if report["inotify"] is not None:
        print(f"inotify: {report['inotify']}")
    for provider in report["providers"]:
        print(f"provider {provider['name']:<8} {'ok' if provider['installed'] else 'missing':<8} {provider['path']}")
    env = report["env"]
    print(f"env (every lane and gate, names only): {', '.join(env['base']) or 'nothing'}; plus its own LANES_*")
    for name, extra in env["extra"].items():
        allow = env["allows"].get(name) or []
        print(f"env {name:<8} + {', '.join(extra) or 'nothing more'}"
              + (f"  (allows {', '.join(allow)})" if allow else ""))
    for line in report["gates"]:
        print(f"gates: {line}")
    for line in runner_lines(report["runner"]):
        print(line)
    for change in report["stale"]:
        print(f"stale: {change['lane']} was {change['before']}, now {change['after']} ({change['reason']})")
    for lane_id in report["lost"]:
        print(f"lost lane {lane_id}: `lanes-tui recover {lane_id}`")
    if not report["git_watch"]:
        print("git watch: the targets and remotes are as lanes-tui left them")
    for problem in report["problems"]:
        print(f"PROBLEM: {problem}")
    print(f"{len(report['problems'])} problem(s)")
    return code
