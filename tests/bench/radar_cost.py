"""The conflict radar's cost with N ready lanes: one full look, and its steady CPU per minute.

`python -m tests.bench radar --sizes 50,100` builds one throw-away repository and grows it to each
size: N ready lanes, each a real `lane/<id>` worktree with one change of its own (a new file; every
`--shared`-th lane also edits the same line of `README.md`, so some pairs overlap and their trial
merges conflict), frozen as `check` freezes it (`git.frozen_work.freeze`) and recorded `ready`. No
supervisor, agent or gate runs: what is measured is the radar alone, as the dashboard's engine drives
it (`live.radar_watch.RadarWatch.refresh`, which the engine's scan calls; a fake clock steps it the
engine's 5 s between looks, so a "minute" is the twelve looks of a minute, one of them full).

Per size:
- **first look**: a fresh dashboard's radar (empty caches) until its report is complete: every ready
  pair's trial merge tried. A look's trial merges are capped (`git.radar.MERGES_PER_LOOK`), so it
  can take several looks; the figure is their sum and the longest one.
- **full look, warm**: a look that asks git about every lane (the one a minute), caches warm.
- **steady minute**: twelve looks, nothing moving; CPU of this process and of the git processes it
  reaped, the git processes started, and the longest look. The per cent is of one core over a minute.

CPU includes the reaped git children (`os.times`), because the radar's work is mostly theirs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.git.frozen_work import freeze
from lanes_tui.engine.git.worktrees import create_worktree
from lanes_tui.engine.live.radar_watch import RadarWatch
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.bench.report import publish

HEADERS = ("lanes", "first look ms", "first looks", "first CPU ms", "full look ms", "steady look ms",
           "CPU ms/min", "CPU % core", "git procs/min")
#: Seconds between two looks of the dashboard's radar (`RadarWatch.every_s`).
LOOK_S = 5.0
_ENV = {"GIT_AUTHOR_NAME": "Radar Bench", "GIT_AUTHOR_EMAIL": "radar@example.invalid",
        "GIT_COMMITTER_NAME": "Radar Bench", "GIT_COMMITTER_EMAIL": "radar@example.invalid"}


@dataclass
class Cost:
    """What some looks cost: wall, this process's CPU, its reaped children's CPU, git processes."""

    wall_s: float = 0.0
    own_s: float = 0.0
    children_s: float = 0.0
    git_procs: int = 0
    looks: list[float] = field(default_factory=list)

    @property
    def cpu_s(self) -> float:
        return self.own_s + self.children_s


class GitCounter:
    """Counts the processes started while it is installed (every one the radar starts is git)."""

    def __init__(self) -> None:
        self.count = 0
        self._original: Callable[..., None] | None = None

    @contextmanager
    def installed(self) -> Iterator[GitCounter]:
        original = subprocess.Popen.__init__
        counter = self

        def counting(popen: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
            counter.count += 1
            original(popen, *args, **kwargs)

        subprocess.Popen.__init__ = counting  # type: ignore[method-assign]
        try:
            yield self
        finally:
            subprocess.Popen.__init__ = original  # type: ignore[method-assign]


def measure_looks(watch: RadarWatch, clock: FakeClock, looks: int, counter: GitCounter,
                  before: Callable[[int], None] | None = None) -> Cost:
    """`looks` looks, the clock stepped `LOOK_S` before each; their cost."""
    cost = Cost()
    own0, times0, git0 = time.process_time(), os.times(), counter.count
    for i in range(looks):
        clock.advance(LOOK_S)
        if before is not None:
            before(i)
        t0 = time.perf_counter()
        watch.refresh()
        cost.looks.append(time.perf_counter() - t0)
    times1 = os.times()
    cost.wall_s = sum(cost.looks)
    cost.own_s = time.process_time() - own0
    cost.children_s = (times1.children_user - times0.children_user) + (times1.children_system - times0.children_system)
    cost.git_procs = counter.count - git0
    return cost


class ReadyWorld:
    """A throw-away repository with ready lanes made cheaply (worktree, one change, frozen, a record)."""

    def __init__(self, shared_every: int, root: Path | None = None) -> None:
        self.shared_every = shared_every
        self.root = Path(tempfile.mkdtemp(prefix="lanes-radar-bench-", dir=root))
        self.repo = self.root / "project"
        self.store = LaneStore(StatePaths(self.repo))
        self.lanes: list[str] = []
        self._saved = {key: os.environ.get(key) for key in _ENV}
        os.environ.update(_ENV)
        self.repo.mkdir()
        _git(self.repo, "init", "-q", "-b", "programme")
        (self.repo / "README.md").write_text("# radar bench\n\ntitle line\n")
        for i in range(20):
            (self.repo / f"module_{i:02d}.py").write_text(f"VALUE = {i}\n")
        (self.repo / ".gitignore").write_text(".lanes/state/\n")
        _git(self.repo, "add", "-A")
        _git(self.repo, "commit", "-q", "-m", "initial")
        self.store.paths.ensure()

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def grow_to(self, count: int) -> float:
        """Make ready lanes until there are `count`; the seconds it took."""
        started = time.monotonic()
        while len(self.lanes) < count:
            self.add_lane(self._default_change)
        return time.monotonic() - started

    def _default_change(self, worktree: Path, index: int) -> None:
        (worktree / f"lane_{index:03d}.py").write_text(f"LANE = {index}\n")
        if index % self.shared_every == 0:  # the same line: these lanes' trial merges conflict
            (worktree / "README.md").write_text(f"# radar bench\n\ntitle from lane {index}\n")

    def add_lane(self, change: Callable[[Path, int], None]) -> str:
        """One ready lane whose work is what `change(worktree, its number)` does, frozen as `check` does."""
        index = len(self.lanes) + 1
        lane_id = f"ready-{index:03d}-a1"
        info = create_worktree(self.repo, self.root / "worktrees", lane_id)
        change(info.path, index)
        freeze(self.repo, info.path, lane_id, 1, info.base_sha)
        now = time.time()
        self.store.create(LaneRecord(
            id=lane_id, slug=lane_id.removesuffix("-a1"), attempt=1, task_type="backend", prompt="p",
            chain=["sim"], repo=str(self.repo), worktree=str(info.path), branch=info.branch,
            base_sha=info.base_sha, target_branch="programme", state="ready", state_reason="gates passed",
            result="OK", created=now, updated=now))
        self.lanes.append(lane_id)
        return lane_id


def measure(world: ReadyWorld, size: int) -> dict[str, Any]:
    """The figures for `size` ready lanes (the world grown to it first)."""
    build_s = world.grow_to(size)
    print(f"{size} ready lanes ({build_s:.1f}s to make the new ones)", file=sys.stderr, flush=True)
    clock = FakeClock()
    watch = RadarWatch(world.repo, world.store, clock)
    counter = GitCounter()
    with counter.installed():
        first = Cost()
        # A fresh radar's looks until its report is complete (trial merges are capped per look).
        while True:
            cost = measure_looks(watch, clock, 1, counter)
            for name in ("wall_s", "own_s", "children_s", "git_procs"):
                setattr(first, name, getattr(first, name) + getattr(cost, name))
            first.looks += cost.looks
            if not getattr(watch.radar, "pending", 0) or len(first.looks) >= 1000:
                break
        watch.full_at = float("-inf")  # the next look is the once-a-minute look at every lane
        full = measure_looks(watch, clock, 1, counter)
        # A steady minute: twelve looks, the first of them the minute's full look.
        steady = measure_looks(watch, clock, int(60 / LOOK_S), counter,
                               before=lambda i: setattr(watch, "full_at", float("-inf")) if i == 0 else None)
    report = watch.report
    return {
        "lanes": size,
        "ready": sum(1 for r in world.store.all() if r.state == "ready"),
        "lanes_with_findings": sum(1 for lane in world.lanes if report.of(lane)),
        "problems": len(report.problems),
        "first_looks": len(first.looks),
        "first_wall_ms": first.wall_s * 1000.0,
        "first_longest_ms": max(first.looks) * 1000.0,
        "first_cpu_ms": first.cpu_s * 1000.0,
        "first_git_procs": first.git_procs,
        "full_look_ms": full.wall_s * 1000.0,
        "full_look_cpu_ms": full.cpu_s * 1000.0,
        "steady_longest_ms": max(steady.looks) * 1000.0,
        "steady_cpu_ms_per_min": steady.cpu_s * 1000.0,
        "steady_own_ms_per_min": steady.own_s * 1000.0,
        "steady_children_ms_per_min": steady.children_s * 1000.0,
        "steady_cpu_percent": 100.0 * steady.cpu_s / 60.0,
        "steady_git_procs_per_min": steady.git_procs,
        "merges_run": watch.radar.merges_run,
    }


def row(r: dict[str, Any]) -> list[Any]:
    return [r["lanes"], r["first_wall_ms"], r["first_looks"], r["first_cpu_ms"], r["full_look_ms"],
            r["steady_longest_ms"], r["steady_cpu_ms_per_min"], r["steady_cpu_percent"], r["steady_git_procs_per_min"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench radar", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,100", help="ready lanes, comma-separated (50,100)")
    parser.add_argument("--shared", type=int, default=10, help="every Nth lane also edits README.md (10)")
    parser.add_argument("--out", default=None, help="folder for the JSON (tests/bench/results)")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not sizes or min(sizes) < 1 or args.shared < 1:
        parser.error("--sizes needs positive lane counts and --shared a positive number")
    world = ReadyWorld(args.shared)
    try:
        results = [measure(world, size) for size in sizes]
    finally:
        world.close()
    return publish("radar", vars(args), results, HEADERS, row, args.out)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


if __name__ == "__main__":
    raise SystemExit(main())
