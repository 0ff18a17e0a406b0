"""B4: stall detection — delay past `idle_timeout`, and false stalls — with real sim lanes.

Scripted lanes under real detached supervisors: one that goes silent (must stall), and four that
must never stall although they print nothing for longer than the idle timeout: one burning CPU, one
writing files, one waiting on a question the lead answers late, one whose child processes come and
go. The delay is the watchdog's own reading (`stall.idle_s - idle_timeout_s`, monotonic clock in the
supervisor); the target is at most one sample interval.

    python -m tests.bench.b4 [--runs 3] [--idle-timeout 3] [--sample 0.5]
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

from tests.bench.env import machine_info
from tests.bench.report import command_line, markdown, median, table, write_json

SCENARIOS: dict[str, tuple[str, bool]] = {
    "silent": ("say going quiet\nsleep 120\n", True),
    "cpu": ("say crunching\nburn {busy}\n", False),
    "files": ("say writing\ntouch {busy} --every 0.5\n", False),
    "question": ("ask --yes-no --timeout 120 Go on?\nsay answered\n", False),
    "children": ("say spawning\n{spawns}", False),
}
HEADERS = ("scenario", "runs", "expected", "stalled", "false stalls", "delay past timeout (median)", "max")


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lanes_tui.app", *args], cwd=repo, capture_output=True,
                          text=True, timeout=300, check=False)


def _repo(root: Path, idle_timeout: float, sample: float) -> Path:
    repo = root / "project"
    repo.mkdir()
    for argv in (["init", "-q", "-b", "programme"], ["config", "user.name", "bench"],
                 ["config", "user.email", "bench@lanes.invalid"]):
        subprocess.run(["git", *argv], cwd=repo, check=True)
    (repo / "README.md").write_text("bench\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=repo, check=True)
    (repo / ".lanes").mkdir()
    (repo / ".lanes/config.toml").write_text(
        f'[lanes]\nworktree_root = "{root / "wt"}"\nmax_parallel = 40\nidle_timeout_s = {idle_timeout}\n'
        f'sample_s = {sample}\n[chains]\nbackend = ["sim"]\n[providers.sim]\nmax = 40\n[gates]\ncommands = []\n')
    return repo


def measure(runs: int, idle_timeout: float, sample: float) -> list[dict[str, Any]]:
    busy = idle_timeout * 3
    spawns = "".join(f"spawn-setsid 0.3\nsleep {sample * 1.5}\n" for _ in range(int(busy / (sample * 1.5))))
    with tempfile.TemporaryDirectory(prefix="lanes-bench-b4-") as tmp:
        repo = _repo(Path(tmp), idle_timeout, sample)
        lanes: dict[str, list[str]] = {name: [] for name in SCENARIOS}
        for run in range(runs):
            for name, (script, _) in SCENARIOS.items():
                text = script.format(busy=busy, spawns=spawns)
                proc = _cli(repo, "run", "--prompt", text, "--id", f"{name}-{run}")
                if proc.returncode != 0:
                    raise SystemExit(proc.stderr)
                lanes[name].append(proc.stdout.strip().splitlines()[-1])
        try:
            _answer_late(repo, [lane for lane in lanes["question"]], after_s=busy)
            for lane_ids in lanes.values():
                for lane in lane_ids:
                    _cli(repo, "wait", lane, "--timeout", str(busy * 4 + 60))
            rows = json.loads(_cli(repo, "status", "--json").stdout)
        finally:
            for lane_ids in lanes.values():
                for lane in lane_ids:
                    _cli(repo, "abandon", lane, "--force")
    by_id = {row["id"]: row for row in rows}
    results = []
    for name, (_, should_stall) in SCENARIOS.items():
        stalled = [by_id[lane] for lane in lanes[name] if by_id[lane]["state"] == "stalled"]
        delays = [row["stall"]["idle_s"] - idle_timeout for row in stalled if row.get("stall")]
        results.append({"scenario": name, "runs": runs, "expected": "stall" if should_stall else "no stall",
                        "stalled": len(stalled), "false_stalls": 0 if should_stall else len(stalled),
                        "delay_median_s": median(delays) if delays else None,
                        "delay_max_s": max(delays) if delays else None})
    return results


def _answer_late(repo: Path, lanes: list[str], after_s: float) -> None:
    """The lead is slow: answer every question only after several idle timeouts have passed."""
    deadline = time.monotonic() + after_s
    while time.monotonic() < deadline:
        time.sleep(0.5)
    questions = json.loads(_cli(repo, "inbox", "--json").stdout)
    for question in questions:
        if question["lane"] in lanes and question["state"] == "open":
            _cli(repo, "answer", question["id"], "yes")


def row(result: dict[str, Any]) -> list[Any]:
    delay = result["delay_median_s"]
    worst = result["delay_max_s"]
    return [result["scenario"], result["runs"], result["expected"], result["stalled"], result["false_stalls"],
            "" if delay is None else f"{delay:.2f}s", "" if worst is None else f"{worst:.2f}s"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.b4", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle-timeout", type=float, default=3.0)
    parser.add_argument("--sample", type=float, default=0.5)
    args = parser.parse_args(argv)
    results = measure(args.runs, args.idle_timeout, args.sample)
    rows = [row(r) for r in results]
    print(table(HEADERS, rows))
    record = {"bench": "b4", "command": command_line(), "machine": machine_info(), "params": vars(args),
              "results": results, "table": markdown(HEADERS, rows)}
    print(f"wrote {write_json('b4', record)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
