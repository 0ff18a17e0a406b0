"""B2: the dashboard's CPU in steady state with N lanes printing 20 lines/s — as a real process.

The real dashboard (`lanes-tui --repo REPO`) runs in a tmux pane of 120×36 on its own tmux server,
as a lead would run it: a real terminal driver, real escape sequences into a real terminal
emulator. After it shows the lanes and has settled (`steady_s`), its CPU is measured with psutil
over `window_s` seconds, `runs` windows in a row: (Δ user + Δ system) / Δ wall, in % of one core,
its own and with the children it waited for (git, if any). Alongside, over the same windows:

- all supervisors together (the rest of what lanes-tui costs; per lane = total / N),
- all sim agents together (the simulated work itself, not lanes-tui),
- the tmux server (the terminal emulator drawing the dashboard, not lanes-tui).

RSS is the dashboard's resident set at the end of the last window; supervisor RSS is the median.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from tests.bench.env import BenchRepo
from tests.bench.report import median

SIZE = (120, 36)


class Tmux:
    """One private tmux server (its own socket) with one session of exactly SIZE."""

    def __init__(self) -> None:
        self.socket = f"lanes-bench-{uuid.uuid4().hex[:8]}"
        self.session = "bench"

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              check=False).stdout

    def start(self, command: list[str], cwd: Path) -> None:
        width, height = SIZE
        # The size must be right before the app starts: a detached session is born at default-size;
        # and COLUMNS / LINES from our environment would override the real pane size in Textual.
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "start-server", ";",
                        "set-option", "-g", "default-size", f"{width}x{height}", ";",
                        "new-session", "-d", "-s", self.session, "-x", str(width), "-y", str(height),
                        "-c", str(cwd), "env", "-u", "COLUMNS", "-u", "LINES", *command], check=True)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session)

    def pane_pid(self) -> int:
        return int(self.run("display-message", "-p", "-t", self.session, "#{pane_pid}").strip())

    def server_pid(self) -> int:
        return int(self.run("display-message", "-p", "-t", self.session, "#{pid}").strip())

    def wait_screen(self, predicate: Any, timeout: float = 60.0) -> str:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.2)
        raise RuntimeError(f"the dashboard never showed what was expected; last screen:\n{text}")

    def kill(self) -> None:
        self.run("kill-server")


def have_tmux() -> bool:
    return shutil.which("tmux") is not None


def dashboard_command(repo: Path) -> list[str]:
    """`lanes-tui --repo REPO` from this interpreter's environment."""
    script = Path(sys.executable).parent / "lanes-tui"
    if script.exists():
        return [str(script), "--repo", str(repo)]
    return [sys.executable, "-m", "lanes_tui.app", "--repo", str(repo)]


@dataclass
class _Clock:
    """CPU seconds of a set of processes, by pid, taken at one moment."""

    wall: float
    cpu: dict[int, float]

    @classmethod
    def take(cls, procs: list[psutil.Process], children: bool = False) -> _Clock:
        cpu = {}
        for proc in procs:
            try:
                t = proc.cpu_times()
                cpu[proc.pid] = t.user + t.system + ((t.children_user + t.children_system) if children else 0.0)
            except psutil.Error:
                continue
        return cls(time.monotonic(), cpu)

    def percent_since(self, before: _Clock) -> float:
        """% of one core, over the processes seen at both moments."""
        wall = self.wall - before.wall
        used = sum(self.cpu[pid] - before.cpu[pid] for pid in self.cpu.keys() & before.cpu.keys())
        return 100.0 * used / wall if wall > 0 else 0.0


def measure(world: BenchRepo, lanes: int, *, runs: int, window_s: float, steady_s: float) -> dict[str, Any]:
    """Start the dashboard in tmux on the world's repository and measure `runs` windows."""
    term = Tmux()
    try:
        term.start(dashboard_command(world.repo), world.repo)
        first = world.lanes[0]
        term.wait_screen(lambda s: first in s and f"Output · {first}" in s, timeout=90)
        dashboard = psutil.Process(term.pane_pid())
        if "lanes" not in " ".join(dashboard.cmdline()):
            raise RuntimeError(f"the pane runs {dashboard.cmdline()}, not the dashboard")
        tmux_server = psutil.Process(term.server_pid())
        time.sleep(steady_s)
        windows = []
        for _ in range(runs):
            supervisors = world.supervisors()
            agents = [c for s in supervisors for c in _children(s)]
            groups = {"dashboard": ([dashboard], False), "dashboard_with_children": ([dashboard], True),
                      "supervisors": (supervisors, False), "agents": (agents, False),
                      "tmux": ([tmux_server], False)}
            before = {name: _Clock.take(procs, children) for name, (procs, children) in groups.items()}
            time.sleep(window_s)
            after = {name: _Clock.take(procs, children) for name, (procs, children) in groups.items()}
            window = {f"{name}_cpu_percent": after[name].percent_since(before[name]) for name in groups}
            window["supervisors_alive"] = len(supervisors)
            window["dashboard_rss_mb"] = dashboard.memory_info().rss / 2**20
            window["supervisor_rss_mb"] = median([_rss(s) for s in supervisors])
            windows.append(window)
        if not dashboard.is_running():
            raise RuntimeError("the dashboard exited during the measurement")
    finally:
        term.kill()
    summary: dict[str, Any] = {"lanes": lanes, "window_s": window_s, "steady_s": steady_s, "windows": windows}
    for key in windows[0]:
        summary[key] = median([w[key] for w in windows])
    summary["supervisor_cpu_percent_per_lane"] = summary["supervisors_cpu_percent"] / lanes
    summary["lanes_tui_cpu_percent"] = summary["dashboard_with_children_cpu_percent"] + summary[
        "supervisors_cpu_percent"]
    return summary


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


def _rss(proc: psutil.Process) -> float:
    try:
        return float(proc.memory_info().rss) / 2**20
    except psutil.Error:
        return float("nan")


HEADERS = ("lanes", "dashboard %", "+children %", "RSS MB", "supervisors %", "per lane %", "sup RSS MB",
           "lanes-tui %", "agents %", "tmux %")


def row(summary: dict[str, Any]) -> list[Any]:
    return [summary["lanes"], summary["dashboard_cpu_percent"], summary["dashboard_with_children_cpu_percent"],
            summary["dashboard_rss_mb"], summary["supervisors_cpu_percent"],
            summary["supervisor_cpu_percent_per_lane"], summary["supervisor_rss_mb"],
            summary["lanes_tui_cpu_percent"], summary["agents_cpu_percent"], summary["tmux_cpu_percent"]]
