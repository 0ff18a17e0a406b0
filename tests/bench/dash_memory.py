"""Dashboard memory: what each import adds, what the live dashboard holds (RSS and PSS), and by whose code.

`python -m tests.bench.dash_memory [--lanes 0,20] [--settle 20] [--trace]`

- **imports**: one fresh interpreter per step, each importing what the steps before it did and one
  thing more (Rich, Textual, the panes, the dashboard's first frame, the `Engine`, psutil, GitPython,
  the help screen, the conversation view); its RSS and PSS (`/proc/self/smaps_rollup`) after the step.
- **dashboard**: `lanes-tui --repo REPO` in a fresh tmux server (160×48, as B10) on a repository with
  `--lanes` sim lanes printing 20 lines/s; `--settle` seconds after the first lane's output shows (or
  the first frame, with none), the RSS and PSS of the dashboard's process: B10's memory method.
- **by code** (`--trace`): the dashboard run headless in a subprocess with tracemalloc on, the same
  settle, then its live allocations grouped by the package of the line that made them (the modules'
  own objects count with the package imported; RSS also holds the interpreter and freed arenas).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench import procstat
from tests.bench.b2 import dashboard_command
from tests.bench.b10 import Term
from tests.bench.env import BenchRepo
from tests.bench.report import publish

#: (label, the import added at this step); each step imports every one before it as well.
IMPORT_STEPS: tuple[tuple[str, str], ...] = (
    ("python", ""),
    ("+ rich.console", "import rich.console"),
    ("+ textual.app", "import textual.app"),
    ("+ Textual widgets of the screen", "from textual.widgets import Footer, Header, TabbedContent, TabPane"),
    ("+ lanes_tui panes", "from lanes_tui.widgets import LanesTable, OutputPane, MetersPane, InboxPane"),
    ("+ dashboard (first frame)", "import lanes_tui.app.dashboard.app"),
    ("+ Engine (live.engine)", "import lanes_tui.engine.live.engine"),
    ("+ psutil", "import psutil"),
    ("+ GitPython", "import git"),
    ("+ help screen (Markdown)", "import lanes_tui.widgets.help_screen"),
    ("+ conversation view", "import lanes_tui.widgets.conversation"),
)

_MEASURE = """
import sys
{imports}
def kb(path, key):
    for line in open(path):
        if line.startswith(key):
            return int(line.split()[1])
print(kb("/proc/self/status", "VmRSS:"), kb("/proc/self/smaps_rollup", "Pss:"), len(sys.modules))
"""

_TRACE = """
import sys, time, tracemalloc
tracemalloc.start()
from pathlib import Path
from lanes_tui.app.dashboard.app import LanesApp

settle = float(sys.argv[2])
ROOT = sys.argv[3]
app = LanesApp(Path(sys.argv[1]))

def report() -> None:
    snap = tracemalloc.take_snapshot()
    groups = {}
    for stat in snap.statistics("filename"):
        name = stat.traceback[0].filename
        if "site-packages/" in name:
            key = name.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
        elif name.startswith(ROOT):
            key = "lanes_tui"
        elif name.startswith("<frozen"):
            key = "importlib (module code)"
        else:
            key = "stdlib"
        groups[key] = groups.get(key, 0) + stat.size
    print("TRACE", __import__("json").dumps({"traced_mb": tracemalloc.get_traced_memory()[0] / 1e6,
                                              "groups_mb": {k: v / 1e6 for k, v in groups.items()}}))
    app.exit()

app.call_later(lambda: app.set_timer(settle, report))
app.run(headless=True, size=(160, 48))
"""

HEADERS = ("part", "what", "RSS MB", "PSS MB", "added MB (RSS)", "modules")


def measure_imports() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    done: list[str] = []
    for label, statement in IMPORT_STEPS:
        if statement:
            done.append(statement)
        code = _MEASURE.format(imports="\n".join(done))
        subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)  # .pyc written
        rss, pss, modules = (int(v) for v in subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
        added = rss / 1024 - out[-1]["rss_mb"] if out else rss / 1024
        out.append({"part": "imports", "what": label, "rss_mb": rss / 1024, "pss_mb": pss / 1024,
                    "added_mb": added, "modules": modules})
    return out


def measure_dashboard(world: BenchRepo, settle: float) -> dict[str, Any]:
    term = Term()
    try:
        term.start(dashboard_command(world.repo), world.repo)
        first = world.lanes[0] if world.lanes else None
        term.wait(lambda s: "q Quit" in s and (first is None or f"Output · {first}" in s), 90, "the dashboard")
        dash = term.pane_pid()
        if "lanes" not in procstat.cmdline(dash):
            raise RuntimeError(f"the pane runs {procstat.cmdline(dash)!r}, not the dashboard")
        time.sleep(settle)
        pids = procstat.tree(dash)
        return {"part": "dashboard", "what": f"{len(world.lanes)} lanes, {settle:g} s after the first frame",
                "rss_mb": procstat.rss_mb(pids), "pss_mb": procstat.pss_mb(pids), "added_mb": None,
                "modules": None}
    finally:
        term.kill()


def trace_dashboard(world: BenchRepo, settle: float) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _TRACE, str(world.repo), str(settle),
                           str(Path(__file__).resolve().parents[2])], capture_output=True,
                          text=True, check=True, timeout=settle + 120)
    line = next(v for v in done.stdout.splitlines() if v.startswith("TRACE "))
    data = json.loads(line[len("TRACE "):])
    return {"part": "by code", "what": f"{len(world.lanes)} lanes (tracemalloc)", "rss_mb": None,
            "pss_mb": None, "added_mb": data["traced_mb"], "modules": None, "groups_mb": data["groups_mb"]}


def row(r: dict[str, Any]) -> list[Any]:
    def mb(v: float | None) -> Any:
        return "-" if v is None else round(v, 1)

    return [r["part"], r["what"], mb(r["rss_mb"]), mb(r["pss_mb"]), mb(r["added_mb"]), r["modules"] or "-"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.dash_memory", description=__doc__.splitlines()[0])
    p.add_argument("--lanes", default="0,20", help="lane counts, comma-separated (0,20)")
    p.add_argument("--settle", type=float, default=20.0, help="seconds after the first frame (20)")
    p.add_argument("--trace", action="store_true", help="also group the live allocations by package")
    p.add_argument("--no-imports", action="store_true")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    results = [] if args.no_imports else measure_imports()
    sizes = [int(v) for v in args.lanes.split(",") if v.strip()]
    with BenchRepo(capacity=max([1, *sizes])) as world:
        for n in sizes:
            world.grow_to(n)
            results.append(measure_dashboard(world, args.settle))
            if args.trace:
                results.append(trace_dashboard(world, args.settle))
        world.stop_all()
    for r in results:
        if "groups_mb" in r:
            top = sorted(r["groups_mb"].items(), key=lambda kv: -kv[1])
            print(r["what"], ", ".join(f"{k} {v:.1f}" for k, v in top), file=sys.stderr)
    return publish("dash_memory", vars(args), results, HEADERS, row, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
