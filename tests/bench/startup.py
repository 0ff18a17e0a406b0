"""Start-up cost of the processes an agent or a script starts: wall time and peak RSS per command.

`lanes-tui ask` is started by an agent and left blocking for minutes, and every lane's shim runs
`python -m lanes_tui.app`; both should load only what they run. Each command runs `--runs` times in
a fresh interpreter after one untimed warm-up run, with bytecode caching on (a
`PYTHONDONTWRITEBYTECODE` in the environment is dropped for the children: a lead's machine caches
`.pyc` files, and without them every run would time the compiler, not the imports); the median is
the steady cold start of the interpreter, not of the disk. The peak RSS comes from
`getrusage(RUSAGE_CHILDREN)` of a one-command wrapper, so it is the child's own high-water mark.

    python -m tests.bench.startup [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from tests.bench.env import machine_info
from tests.bench.report import command_line, markdown, median, table, write_json

HEADERS = ("command", "median s", "min s", "max s", "peak RSS MB")

#: What is measured: the agent-side helpers first, then the dashboard's import for scale.
COMMANDS: dict[str, list[str]] = {
    "lanes-tui ask --help": ["-m", "lanes_tui.app", "ask", "--help"],
    "lanes-tui inbox --help": ["-m", "lanes_tui.app", "inbox", "--help"],
    "lanes-tui status --help": ["-m", "lanes_tui.app", "status", "--help"],
    "import supervisor": ["-c", "import lanes_tui.engine.supervisor.main"],
}

_WRAPPER = """
import resource, subprocess, sys, time
start = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
took = time.perf_counter() - start
print(took, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def measure_one(argv: list[str], runs: int) -> dict[str, Any]:
    times: list[float] = []
    peaks: list[int] = []
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, *argv], capture_output=True, env=env, check=False)  # warm-up: .pyc written
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _WRAPPER, sys.executable, *argv], capture_output=True,
                             text=True, env=env, check=True).stdout.split()
        times.append(float(out[0]))
        peaks.append(int(out[1]))
    return {"median_s": median(times), "min_s": min(times), "max_s": max(times),
            "peak_rss_mb": median([p / 1e6 for p in peaks]), "times_s": times}


def row(name: str, result: dict[str, Any]) -> list[Any]:
    return [name, round(result["median_s"], 3), round(result["min_s"], 3), round(result["max_s"], 3),
            round(result["peak_rss_mb"], 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.startup", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per command (10)")
    args = parser.parse_args(argv)
    results = {}
    for name, cmd in COMMANDS.items():
        results[name] = measure_one(cmd, args.runs)
    rows = [row(n, r) for n, r in results.items()]
    record = {"bench": "startup", "command": command_line(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
              "machine": machine_info(), "params": vars(args), "results": results,
              "table": markdown(HEADERS, rows)}
    path = write_json("startup", record)
    print(table(HEADERS, rows))
    print()
    print(record["table"])
    print(f"\n({path})")
    print(json.dumps({n: r["median_s"] for n, r in results.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
