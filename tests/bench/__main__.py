"""`python -m tests.bench NAME [--sizes 10,50,100] [--runs N] …` — run benchmarks B1 / B2.

`python -m tests.bench b5` … `b10` run the scripts `tests/bench/b5.py` … `b10.py` with their own
options (`python -m tests.bench b10 --help`); `python -m tests.bench radar` runs
`tests/bench/radar_cost.py` (the conflict radar with N ready lanes).

NAME is `b1` (key-press to screen update), `b2` (dashboard CPU in tmux) or `all` (both on the same
lanes). Sizes are run in ascending order in one world: lanes are added (never restarted) to reach
each size, so the 50-lane figures run on the 10 lanes of the first size plus 40 new ones.
`--traffic claude` (codex, gemini): the lanes print a real CLI's recording through its channel
(`tests.bench.traffic`) at `--rate` lines a second.
Each benchmark prints its table and writes `tests/bench/results/<name>-<timestamp>.json`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench import b1, b2
from tests.bench.env import BenchRepo, machine_info
from tests.bench.report import command_line, markdown, table, write_json
from tests.bench.traffic import check as traffic_arg

NAMES = ("b1", "b2", "all")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=NAMES)
    parser.add_argument("--sizes", default="10,50,100", help="lane counts, comma-separated (default 10,50,100)")
    parser.add_argument("--runs", type=int, default=3, help="B1: fresh dashboards per size; B2: windows (3)")
    parser.add_argument("--presses", type=int, default=200, help="B1: timed key-presses per run (200)")
    parser.add_argument("--warmup-presses", type=int, default=10, help="B1: untimed presses first (10)")
    parser.add_argument("--settle", type=float, default=3.0, help="B1: seconds after the app is up (3)")
    parser.add_argument("--window", type=float, default=30.0, help="B2: seconds per CPU window (30)")
    # Steady state (BENCHMARKS.md): in a lane's first minute its elapsed cell ticks by the second, so
    # every row repaints at each 2 s poll; after it, by the minute. 60 s, as issue 15 warms B10 up.
    parser.add_argument("--steady", type=float, default=60.0, help="B2: seconds before measuring (60: past "
                        "the lanes' first minute, whose elapsed cells tick by the second)")
    parser.add_argument("--rate", type=float, default=20.0, help="lines a second each lane prints (20)")
    parser.add_argument("--traffic", type=traffic_arg, default="plain",
                        help="what the lanes print: the sim's lines (plain) or a real CLI's recording at --rate "
                        "lines a second (claude, codex, gemini: tests/bench/traffic)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the JSON (tests/bench/results)")
    args = parser.parse_args(argv)
    args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not args.sizes or min(args.sizes) < 1:
        parser.error("--sizes needs positive lane counts")
    return args


def run(args: argparse.Namespace, *, command: str | None = None) -> dict[str, dict[str, Any]]:
    """Run what `args` asks for; returns {"b1": record, "b2": record} (only those that ran)."""
    names = ("b1", "b2") if args.name == "all" else (args.name,)
    if "b2" in names and not b2.have_tmux():
        raise SystemExit("B2 needs tmux (apt-get install tmux)")
    machine = machine_info()
    params = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    records: dict[str, dict[str, Any]] = {
        name: {"bench": name, "command": command or command_line(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
               "machine": machine, "params": params, "results": []}
        for name in names
    }
    with BenchRepo(capacity=max(args.sizes), rate=args.rate, traffic=args.traffic) as world:
        for size in args.sizes:
            launch_s = world.grow_to(size)
            print(f"{size} lanes printing ({launch_s:.1f}s to start the new ones)", file=sys.stderr, flush=True)
            if "b1" in names:
                result = b1.measure(world.repo, size, runs=args.runs, presses=args.presses,
                                    warmup_presses=args.warmup_presses, settle_s=args.settle)
                world.check_printing()
                records["b1"]["results"].append(result)
                print(table(b1.HEADERS, [b1.row(result)]), file=sys.stderr, flush=True)
            if "b2" in names:
                result = b2.measure(world, size, runs=args.runs, window_s=args.window, steady_s=args.steady)
                world.check_printing()
                records["b2"]["results"].append(result)
                print(table(b2.HEADERS, [b2.row(result)]), file=sys.stderr, flush=True)
    for name, record in records.items():
        record["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        module = b1 if name == "b1" else b2
        rows = [module.row(r) for r in record["results"]]
        record["table"] = markdown(module.HEADERS, rows)
        record["json"] = str(write_json(name, record, args.out))
    return records


#: Benchmarks with their own command line: `python -m tests.bench b10 --sizes 5,20` runs `b10.main`.
OWN_MAIN = ("b5", "b6", "b7", "b8", "b9", "b10", "b11", "radar")
#: Benchmarks whose script is not named after them.
MODULES = {"b11": "b11_ray", "radar": "radar_cost"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in OWN_MAIN:
        import importlib

        return int(importlib.import_module(f"tests.bench.{MODULES.get(argv[0], argv[0])}").main(argv[1:]))
    args = parse(argv)
    records = run(args)
    machine = next(iter(records.values()))["machine"]
    print(f"\nmachine: {machine['cpu_model']}, {machine['logical_cores']} cores, {machine['memory_gb']} GB, "
          f"Python {machine['python']}, Textual {machine['textual']}, load at start {machine['load_avg_at_start']}")
    print(f"command: {command_line()}")
    for name, record in records.items():
        module = b1 if name == "b1" else b2
        print(f"\n{name.upper()}  ({record['json']})")
        print(table(module.HEADERS, [module.row(r) for r in record["results"]]))
        print()
        print(record["table"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
