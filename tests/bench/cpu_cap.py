"""The governor's CPU cap, measured: a lane burning 4 busy loops under a cap, and uncapped for contrast.

Each lane runs the sim's `burn S --procs 4` (four processes spinning). Over a window the CPU
seconds of every process below the lane's supervisor (the agent and its burners, from psutil) are
divided by the wall seconds: the share of one core the lane really got. The cap is the lane's
`[lanes] cpu`; `off` is the same lane with no cpu cap (it takes what the machine has). The mechanism
column says what enforced the cap (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`, or nothing but nice).

    python -m tests.bench.cpu_cap [--window 10] [--caps 50%,off]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from tests.bench.env import machine_info
from tests.bench.report import command_line, markdown, table, write_json

HEADERS = ("cpu cap", "mechanism", "busy loops", "measured % of a core", "window s")


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lanes_tui.app", *args], cwd=repo, capture_output=True,
                          text=True, timeout=300, check=False)


def _repo(root: Path, cap: str) -> Path:
    repo = root / f"project-{cap.rstrip('%')}"
    repo.mkdir()
    for argv in (["init", "-q", "-b", "programme"], ["config", "user.name", "bench"],
                 ["config", "user.email", "bench@lanes.invalid"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *argv], cwd=repo, check=True)
    (repo / ".lanes").mkdir()
    (repo / ".lanes/config.toml").write_text(
        f'[lanes]\nworktree_root = "{root / "wt"}"\nsample_s = 5\ncpu = "{cap}"\n'
        '[chains]\nbackend = ["sim"]\n[gates]\ncommands = []\n')
    return repo


def _tree_cpu(supervisor: psutil.Process) -> float:
    total = 0.0
    for proc in supervisor.children(recursive=True):
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            continue
    return total


def measure(cap: str, window_s: float, loops: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lanes-bench-cpu-") as tmp:
        repo = _repo(Path(tmp), cap)
        proc = _cli(repo, "run", "--prompt", f"burn {window_s + 30:g} --procs {loops}", "--id", "burner")
        if proc.returncode != 0:
            raise SystemExit(f"cannot start the lane: {proc.stderr}")
        lane = proc.stdout.strip().splitlines()[-1]
        lane_dir = repo / ".lanes/state/lanes" / lane
        try:
            _cli(repo, "wait", lane, "--until", "running", "--timeout", "60")
            time.sleep(2)  # the burners are forked and spinning
            record = json.loads((lane_dir / "lane.json").read_text())
            plan = {c["cap"]: c for c in (record.get("governor") or {}).get("caps", [])}
            supervisor = psutil.Process(json.loads((lane_dir / "supervisor.json").read_text())["pid"])
            before, started = _tree_cpu(supervisor), time.monotonic()
            time.sleep(window_s)
            used, elapsed = _tree_cpu(supervisor) - before, time.monotonic() - started
        finally:
            _cli(repo, "abandon", lane, "--force")
    return {"cap": cap, "mechanism": plan.get("cpu", {}).get("mechanism", "?"), "loops": loops,
            "cpu_percent": 100 * used / elapsed, "window_s": elapsed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.cpu_cap", description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--caps", default="50%,off")
    parser.add_argument("--loops", type=int, default=4)
    args = parser.parse_args(argv)
    results = [measure(cap.strip(), args.window, args.loops) for cap in args.caps.split(",") if cap.strip()]
    rows = [[r["cap"], r["mechanism"], r["loops"], f"{r['cpu_percent']:.1f}", f"{r['window_s']:.1f}"]
            for r in results]
    print(table(HEADERS, rows))
    record = {"bench": "cpu_cap", "command": command_line(), "machine": machine_info(), "params": vars(args),
              "results": results, "table": markdown(HEADERS, rows)}
    print(f"wrote {write_json('cpu_cap', record)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
