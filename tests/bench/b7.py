"""B7: start-up to first full paint, and re-attach, against a minimal Textual app started the same way.

`python -m tests.bench b7 [--lanes 100] [--runs 5]`

Both are started the same way: a fresh tmux server with one 120×36 session running the program
(`lanes-tui --repo REPO`, or a minimal Textual app — Header, a Static, Footer with one binding — from
the same interpreter). The clock starts just before `tmux new-session` and stops at the first
`capture-pane` (polled every 10 ms) that shows the whole screen: for the dashboard the footer's
`q Quit`, the Meters panel and, with lanes, the first lane's id; for the minimal app its footer and
its text. Alternately, `--runs` times each; medians; ratio = dashboard / minimal.

- **start-up**: a repository with 0 lanes (target ratio ≤ 1.5);
- **re-attach**: the dashboard started on a repository whose `--lanes` lanes are already running
  (detached supervisors with sim agents that said one line and sleep) — what a lead sees after
  closing and reopening the dashboard (target ratio ≤ 2).

Bytecode caching is on for both (a `PYTHONDONTWRITEBYTECODE` in the environment is dropped, as
`tests.bench.startup` does): a lead's machine caches `.pyc` files, and without them every start of the
dashboard would compile its ~300 modules (about 0.3 s here), which the minimal app, all in
site-packages compiled at install, never pays. The untimed first start of each writes them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from tests.bench.b2 import dashboard_command
from tests.bench.b10 import Term
from tests.bench.env import BenchRepo
from tests.bench.report import median, publish

MINIMAL = '''
from textual.app import App
from textual.widgets import Footer, Header, Static

class Minimal(App):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self):
        yield Header()
        yield Static("minimal app ready")
        yield Footer()

Minimal().run()
'''
SLEEPER = "Benchmark lane: say one line and sleep.\nsay ready\nsleep 36000\n"
HEADERS = ("case", "lanes", "minimal Textual s", "dashboard s", "ratio")


def time_paint(command: list[str], cwd: Path, predicate: Any, timeout: float = 60.0) -> float:
    term = Term(size=(120, 36))
    try:
        t0 = time.perf_counter()
        term.start(command, cwd)
        end = t0 + timeout
        while time.perf_counter() < end:
            if predicate(term.screen()):
                return time.perf_counter() - t0
            time.sleep(0.01)
        raise RuntimeError(f"{command[0]} never painted; screen:\n{term.screen()}")
    finally:
        term.kill()


def _pair(world: BenchRepo, runs: int, minimal_file: Path) -> tuple[list[float], list[float]]:
    first = world.lanes[0] if world.lanes else None

    def dash_ready(s: str) -> bool:
        return "q Quit" in s and "Meters" in s and (first is None or first in s)

    minimal: list[float] = []
    dash: list[float] = []
    # one untimed start of each: the .pyc files and the page cache, as on a lead's machine
    time_paint([sys.executable, str(minimal_file)], world.repo, lambda s: "minimal app ready" in s and "Quit" in s)
    time_paint(dashboard_command(world.repo), world.repo, dash_ready, timeout=120)
    for _ in range(runs):
        minimal.append(time_paint([sys.executable, str(minimal_file)], world.repo,
                                  lambda s: "minimal app ready" in s and "Quit" in s))
        dash.append(time_paint(dashboard_command(world.repo), world.repo, dash_ready, timeout=120))
        print(f"minimal {minimal[-1]:.3f}s, dashboard {dash[-1]:.3f}s", file=sys.stderr, flush=True)
    return minimal, dash


def measure(lanes: int, runs: int) -> list[dict[str, Any]]:
    results = []
    with BenchRepo(capacity=max(lanes, 1)) as world:
        minimal_file = world.root / "minimal_app.py"
        minimal_file.write_text(MINIMAL)
        for case, count in (("start-up", 0), ("re-attach", lanes)):
            if count:
                config = load_config(world.repo)
                started = time.monotonic()
                while len(world.lanes) < count:
                    record = launch_lane(world.repo, config, LaunchRequest(
                        prompt=SLEEPER, slug=f"b7-{len(world.lanes) + 1:03d}", allow_load=True))
                    world.lanes.append(record.id)
                world.wait_running(timeout=600)
                print(f"{count} lanes running ({time.monotonic() - started:.1f}s)", file=sys.stderr, flush=True)
            minimal, dash = _pair(world, runs, minimal_file)
            results.append({"case": case, "lanes": count, "minimal_s": minimal, "dashboard_s": dash,
                            "minimal_median_s": median(minimal), "dashboard_median_s": median(dash),
                            "ratio": median(dash) / median(minimal)})
    return results


def row(r: dict[str, Any]) -> list[Any]:
    return [r["case"], r["lanes"], r["minimal_median_s"], r["dashboard_median_s"], r["ratio"]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench b7", description=__doc__.splitlines()[0])
    p.add_argument("--lanes", type=int, default=100)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the tmux servers (and so both apps) inherit this
    results = measure(args.lanes, args.runs)
    return publish("b7", vars(args), results, HEADERS, row, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
