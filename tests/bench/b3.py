"""B3: what one supervisor costs: CPU per minute and RSS, idle and printing, small and large worktree.

Each lane's supervisor is measured over a window (CPU from `/proc/PID/schedstat` in ns, wake-ups
from its voluntary context switches, memory with psutil: RSS, USS (its own pages) and PSS (its own
plus its share of the pages it shares with its fork server and sibling supervisors)), for an idle
agent (`sleep`) and one printing 20 lines/s, in a worktree of 100 files and one of 20,000 files: the
watchdog's file signal is inotify, so the sample cost must not grow with the file count. Nobody
watches those lanes, so their output is read every `cadence.UNWATCHED_REST_S`; one more printing
lane holds a watch lease for the window (renewed as the dashboard renews the lane on its screen)
and is read at the live pace, every `output_pump.REST_S`. Two floors run in the same
window (`b3_floor`): a bare asyncio loop and a bare `selectors` loop reading the same agent with
the same rest, which is what a supervisor cannot go below on either kind of loop.

    python -m tests.bench.b3 [--window 30] [--landlock on|off] [--traffic plain|claude|codex|gemini[@RATE]]

`--traffic claude` (codex, gemini): the agents print a real CLI's recording through its preset's channel
(`tests.bench.traffic`) at the same 20 lines/s; the floors still read the sim's plain lines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.control_client import watch_lane
from lanes_tui.engine.live.watch_lease import LEASE_S, RENEW_S
from tests.bench.env import machine_info
from tests.bench.report import command_line, markdown, table, write_json
from tests.bench.traffic import check as traffic_arg
from tests.bench.traffic import provider as traffic_provider
from tests.bench.traffic import provider_toml

HEADERS = ("worktree files", "agent", "supervisor CPU % of a core", "CPU s per minute", "wake-ups /s", "RSS MB",
           "USS MB", "PSS MB")
#: The floors run beside the supervisors in the same window (`b3_floor`): same agent, same rhythm.
FLOORS = ("asyncio", "selectors")


def run_ns(pid: int) -> int:
    """CPU time in ns from `/proc/PID/schedstat`: 10 ms clock ticks are too coarse for 0.1 % in 30 s."""
    with open(f"/proc/{pid}/schedstat") as handle:
        return int(handle.read().split()[0])


def switches(pid: int) -> int:
    """Voluntary context switches: how often the process went to sleep, i.e. its wake-ups."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    return 0


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if args and args[0] == "run" and os.environ.get("LANES_TUI_LANDLOCK") == "off":
        args = (*args, "--allow-uncontained")  # `--landlock off`: the lanes run without the kernel's fence
    return subprocess.run([sys.executable, "-m", "lanes_tui.app", *args], cwd=repo, capture_output=True,
                          text=True, timeout=300, check=False)


def _repo(root: Path, files: int, traffic: str = "plain") -> Path:
    repo = root / f"project-{files}"
    repo.mkdir()
    for argv in (["init", "-q", "-b", "programme"], ["config", "user.name", "bench"],
                 ["config", "user.email", "bench@lanes.invalid"]):
        subprocess.run(["git", *argv], cwd=repo, check=True)
    for index in range(files):
        folder = repo / f"pkg{index // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{index % 100}.py").write_text(f"VALUE = {index}\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=repo, check=True)
    (repo / ".lanes").mkdir()
    (repo / ".lanes/config.toml").write_text(
        f'[lanes]\nworktree_root = "{root / "wt"}"\nsample_s = 5\n[chains]\nbackend = ["{traffic_provider(traffic)}"]\n'
        f'{provider_toml(traffic, 10)}[gates]\ncommands = []\n')
    return repo


class Leases:
    """Holds a watch lease on some lanes for the window, as the dashboard does for the lane on screen."""

    def __init__(self, lanes: list[tuple[Path, str]]) -> None:
        self.lanes = lanes
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._renew, daemon=True)
        self.renewals = 0

    def _renew(self) -> None:
        while not self.stop.is_set():
            for repo, lane in self.lanes:
                with contextlib.suppress(LanesError):  # its control socket is not open yet: next time
                    watch_lane(repo, lane, LEASE_S)
            self.stop.wait(1.0 if self.renewals < 3 else RENEW_S)
            self.renewals += 1

    def __enter__(self) -> Leases:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def measure(window_s: float, traffic: str = "plain") -> list[dict[str, Any]]:
    scripts = {"idle": "sleep {t}\n", "printing 20 lines/s": "print {n} --rate 20\n",
               "printing 20 lines/s, watched": "print {n} --rate 20\n"}
    results = []
    with tempfile.TemporaryDirectory(prefix="lanes-bench-b3-") as tmp:
        lanes: list[tuple[Path, str, int, str]] = []
        for files in (100, 20_000):
            repo = _repo(Path(tmp), files, traffic)
            for name, script in scripts.items():
                text = script.format(t=window_s + 60, n=int((window_s + 60) * 20))
                lane_id = name.split()[0] + ("-w" if "watched" in name else "")
                proc = _cli(repo, "run", "--prompt", text, "--id", lane_id)
                lanes.append((repo, proc.stdout.strip().splitlines()[-1], files, name))
        floors = {kind: subprocess.Popen([sys.executable, "-m", "tests.bench.b3_floor", kind, str(window_s + 30)])
                  for kind in FLOORS}
        watched = [(repo, lane) for repo, lane, _, name in lanes if "watched" in name]
        leases = Leases(watched).__enter__()  # renewed from now until the floors are gone
        try:
            time.sleep(8)  # past start-up and the first samples
            # Keyed by (repo, lane): both repositories have lanes called idle-a1 and printing-a1.
            sups = {(repo, lane): psutil.Process(json.loads((repo / ".lanes/state/lanes" / lane / "supervisor.json")
                                                            .read_text())["pid"]) for repo, lane, _, _ in lanes}
            procs: dict[Any, psutil.Process] = dict(sups)
            procs.update({kind: psutil.Process(p.pid) for kind, p in floors.items()})
            start = {key: (run_ns(p.pid), switches(p.pid)) for key, p in procs.items()}
            time.sleep(window_s)
            rows = [((repo, lane), f"{files:,}", name) for repo, lane, files, name in lanes]
            rows += [(kind, "-", f"floor: bare {kind} loop, printing 20 lines/s") for kind in FLOORS]
            for key, files_label, name in rows:
                proc = procs[key]
                cpu = (run_ns(proc.pid) - start[key][0]) / 1e9
                wakes = (switches(proc.pid) - start[key][1]) / window_s
                mem = proc.memory_full_info()
                results.append({"files": files_label, "agent": name, "cpu_percent": 100 * cpu / window_s,
                                "cpu_s_per_min": 60 * cpu / window_s, "wakeups_per_s": wakes,
                                "rss_mb": mem.rss / 1e6, "uss_mb": mem.uss / 1e6, "pss_mb": mem.pss / 1e6})
        finally:
            leases.__exit__()
            for floor in floors.values():
                floor.kill()
                floor.wait()
            for repo, lane, _, _ in lanes:
                _cli(repo, "abandon", lane, "--force")
    return results


def row(result: dict[str, Any]) -> list[Any]:
    return [result["files"], result["agent"], f"{result['cpu_percent']:.3f}", f"{result['cpu_s_per_min']:.3f}",
            f"{result['wakeups_per_s']:.1f}", f"{result['rss_mb']:.1f}", f"{result['uss_mb']:.1f}",
            f"{result['pss_mb']:.1f}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.b3", description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--landlock", choices=("on", "off"), default="on",
                        help="off: the lanes run without the kernel's confinement (LANES_TUI_LANDLOCK=off)")
    parser.add_argument("--traffic", type=traffic_arg, default="plain",
                        help="what the agents print: the sim's lines, or a real CLI's recording (tests/bench/traffic)")
    args = parser.parse_args(argv)
    if args.landlock == "off":
        os.environ["LANES_TUI_LANDLOCK"] = "off"
    results = measure(args.window, args.traffic)
    rows = [row(r) for r in results]
    print(table(HEADERS, rows))
    record = {"bench": "b3", "command": command_line(), "machine": machine_info(), "params": vars(args),
              "processes_on_machine": len(psutil.pids()), "results": results, "table": markdown(HEADERS, rows)}
    print(f"wrote {write_json('b3', record)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
