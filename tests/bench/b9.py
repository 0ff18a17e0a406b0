"""B9: dashboard memory after an hour of output at 100 lanes, the hour compressed by printing faster.

`python -m tests.bench b9 [--lanes 100] [--lines 72000] [--rate 500]`

An hour at B1's 20 lines/s is 72,000 lines a lane. The real dashboard (`lanes-tui --repo REPO`,
tmux 120×36) is started first on the empty repository; then `--lanes` sim lanes are launched, each
printing `--lines` lines at up to `--rate` lines/s and then sleeping (still running). The
dashboard's RSS (`/proc/PID/status`, the pane's process) is sampled every 2 s from before the first
lane to 15 s after the last line has landed in every `output.log`. Target: RSS < 250 MB.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.bench import procstat
from tests.bench.b2 import dashboard_command
from tests.bench.b10 import Term
from tests.bench.env import BenchRepo
from tests.bench.report import publish

HEADERS = ("lanes", "lines/lane", "hours at 20 lines/s", "output MB (all)", "print s", "RSS before MB",
           "RSS peak MB", "RSS end MB", "dashboard alive")


def measure(lanes: int, lines: int, rate: float, timeout: float) -> dict[str, Any]:
    samples: list[tuple[float, float]] = []
    with BenchRepo(capacity=lanes) as world:
        repo = world.repo
        store = LaneStore(StatePaths(repo))
        term = Term(size=(120, 36))
        try:
            term.start(dashboard_command(repo), repo)
            term.wait(lambda s: "q Quit" in s and "Meters" in s, 60, "the dashboard")
            dash = term.pane_pid()
            t0 = time.monotonic()

            def sample() -> None:
                samples.append((time.monotonic() - t0, procstat.rss_mb([dash])))

            sample()
            config = load_config(repo)
            script = f"Benchmark lane: an hour of output, compressed.\nprint {lines} --rate {rate:g}\nsleep 36000\n"
            next_sample = time.monotonic() + 2
            while len(world.lanes) < lanes:
                record = launch_lane(repo, config, LaunchRequest(prompt=script, slug=f"b9-{len(world.lanes) + 1:03d}",
                                                                 allow_load=True))
                world.lanes.append(record.id)
                if time.monotonic() >= next_sample:
                    sample()
                    next_sample += 2
            last = f"line {lines}:".encode()
            pending = list(world.lanes)
            end = time.monotonic() + timeout
            while pending:
                if time.monotonic() > end:
                    raise RuntimeError(f"{len(pending)} lanes had not printed their {lines} lines in {timeout:g}s")
                pending = [lane for lane in pending if not _done(store.lane_paths(lane).output, last)]
                sample()
                time.sleep(2)
            printed_s = time.monotonic() - t0
            for _ in range(8):
                time.sleep(2)
                sample()
            world.check_printing()
            alive = procstat.cpu_seconds(dash) is not None
            output_mb = sum(store.lane_paths(lane).output.stat().st_size for lane in world.lanes) / 1e6
        finally:
            term.kill()
    rss = [r for _, r in samples]
    return {"lanes": lanes, "lines": lines, "rate": rate, "hours": lines / 20 / 3600, "output_mb": output_mb,
            "print_s": printed_s, "rss_before_mb": rss[0], "rss_peak_mb": max(rss), "rss_end_mb": rss[-1],
            "dashboard_alive": alive, "samples": samples}


def _done(output: Path, last: bytes) -> bool:
    try:
        with output.open("rb") as fh:
            fh.seek(max(0, output.stat().st_size - 4096))
            return last in fh.read()
    except OSError:
        return False


def row(r: dict[str, Any]) -> list[Any]:
    return [r["lanes"], r["lines"], r["hours"], r["output_mb"], r["print_s"], r["rss_before_mb"], r["rss_peak_mb"],
            r["rss_end_mb"], r["dashboard_alive"]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench b9", description=__doc__.splitlines()[0])
    p.add_argument("--lanes", type=int, default=100)
    p.add_argument("--lines", type=int, default=72_000, help="lines per lane (72,000 = an hour at 20/s)")
    p.add_argument("--rate", type=float, default=500.0, help="lines a second each lane prints (500)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    result = measure(args.lanes, args.lines, args.rate, args.timeout)
    return publish("b9", vars(args), [result], HEADERS, row, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
