"""B8: output ingestion without loss — one lane printing as fast as it can — with B1 alongside.

`python -m tests.bench b8 [--lines 10000000] [--presses 100] [--no-b1] [--traffic plain|claude|codex|gemini]`

1. **Throughput and loss**: one sim lane runs `print LINES` (no rate: 64 KiB writes, as fast as the
   pipe takes them). Its `output.log` is polled every 50 ms; the rate is the bytes landed between
   the first poll past 1 MiB and the last growth, over that time. When the lane has settled, the
   log is read back: every `line K: …` from 1 to LINES must be there once, in order (lost = missing).
   For scale, the same sim writes straight into a file (no supervisor): the agent's own ceiling.
2. **B1 under the flood**: a lane printing without end plus 9 lanes at 20 lines/s; B1's probe
   (`tests.bench.b1.measure`, real `LanesApp` + `Engine` under `run_test`) bounces the cursor
   between the flooding lane (first row) and the last; its output pane reloads the flooding lane's
   tail on every other press. Target: ≥ 50 MB/s to disk, B1 holds (p95 < 50 ms).

`--traffic claude` (codex, gemini): every lane prints a real CLI's recording through its preset's channel
(`tests.bench.traffic`, the replay agent reads the same scripts); the flood is LINES recorded lines
(20,000 by default: 90–165 MB), checked in the log line for line in the recording's order, and the
agent's own ceiling is the replay agent writing into a file.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.model import SETTLED_STATES
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.bench import b1, replay_agent
from tests.bench.env import BenchRepo
from tests.bench.report import publish
from tests.bench.traffic import argv as replay_argv
from tests.bench.traffic import check as traffic_arg
from tests.bench.traffic import parse as parse_traffic

HEADERS = ("traffic", "lines", "MB", "lane MB/s", "sim → file MB/s", "lost lines", "B1 p50 ms", "B1 p95 ms",
           "output p95 ms", "flood MB/s during B1")
_LINE = re.compile(rb"^line (\d+): ", re.M)


def _watch(output: Path, done: Any, timeout: float = 600) -> tuple[float, float, int]:
    """Poll the log until `done()`; (t_first_past_1MiB, t_last_growth, bytes between)."""
    t_start = size_start = None
    t_last, size_last = 0.0, 0
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        size = output.stat().st_size if output.exists() else 0
        now = time.perf_counter()
        if size > size_last:
            t_last, size_last = now, size
            if t_start is None and size > 2**20:
                t_start, size_start = now, size
        if done():
            break
        time.sleep(0.05)
    if t_start is None or size_start is None:
        raise RuntimeError("the lane never printed 1 MiB")
    return t_start, t_last, size_last - size_start


def _check(output: Path, lines: int, traffic: str = "plain") -> dict[str, Any]:
    data = output.read_bytes()
    if traffic != "plain":
        return _check_replay(data, lines, traffic)
    numbers = [int(m) for m in _LINE.findall(data)]
    expected = 1
    lost = dupes = 0
    for n in numbers:
        if n == expected:
            expected += 1
        elif n > expected:
            lost += n - expected
            expected = n + 1
        else:
            dupes += 1
    lost += max(0, lines - (expected - 1))
    return {"log_bytes": len(data), "lines_seen": len(numbers), "lost": lost, "duplicated_or_reordered": dupes}


def _check_replay(data: bytes, lines: int, traffic: str) -> dict[str, Any]:
    """Loss in a replayed flood: the log's recorded lines must be the recording's middle lines in their
    cyclic order, ids tagged by loop (`replay_agent.line_at`), `lines` of them; a gap is lines lost."""
    _, body, _ = replay_agent.load(replay_agent.recording_path(parse_traffic(traffic)[0]))
    body = [line.rstrip(b"\n") for line in body]
    known = set(body)
    at = seen = lost = dupes = 0
    for line in data.split(b"\n"):
        if replay_agent.untagged(line) not in known:
            continue
        seen += 1
        gap = next((d for d in range(len(body)) if replay_agent.line_at(body, at + d) == line), None)
        if gap is None:
            dupes += 1
            continue
        lost += gap
        at += gap + 1
    lost += max(0, lines - at)
    return {"log_bytes": len(data), "lines_seen": seen, "lost": lost, "duplicated_or_reordered": dupes}


def sim_to_file(lines: int, folder: Path, traffic: str = "plain") -> float:
    target = folder / "direct.log"
    agent = ([sys.executable, "-m", "lanes_tui.engine.sim"] if traffic == "plain"
             else replay_argv(traffic))
    with target.open("wb") as fh:
        t0 = time.perf_counter()
        subprocess.run([*agent, "--prompt", f"print {lines}"], stdout=fh, check=True)
        took = time.perf_counter() - t0
    size = target.stat().st_size
    target.unlink()
    return size / 1e6 / took


def measure(lines: int, presses: int, with_b1: bool, traffic: str = "plain") -> dict[str, Any]:
    result: dict[str, Any] = {"lines": lines, "traffic": traffic}
    with BenchRepo(capacity=12, traffic=traffic) as world:
        repo, config = world.repo, load_config(world.repo)
        store = LaneStore(StatePaths(repo))
        record = launch_lane(repo, config, LaunchRequest(prompt=f"Flood.\nprint {lines}\n", slug="b8-flood",
                                                         allow_load=True))
        world.lanes.append(record.id)
        output = store.lane_paths(record.id).output
        t0, t1, landed = _watch(output, lambda: store.read(record.id).state in SETTLED_STATES)
        result["lane_mb_per_s"] = landed / 1e6 / (t1 - t0) if t1 > t0 else float("nan")
        time.sleep(0.5)
        result.update(_check(output, lines, traffic))
        result["mb"] = result["log_bytes"] / 1e6
        result["sim_to_file_mb_per_s"] = sim_to_file(lines, world.root, traffic)
        print(f"flood: {result['lane_mb_per_s']:.1f} MB/s into output.log, {result['lost']} lost; sim → file "
              f"{result['sim_to_file_mb_per_s']:.1f} MB/s", file=sys.stderr, flush=True)
        if with_b1:
            world.lanes.clear()  # b1 shows every lane in the repository: keep the settled one out of the count
            record = launch_lane(repo, config, LaunchRequest(prompt="Flood.\nprint 1000000000\n",
                                                             slug="b8-flood-2", allow_load=True))
            world.lanes.append(record.id)
            world.grow_to(10)
            flood = store.lane_paths(record.id).output
            size0, t_a = flood.stat().st_size, time.perf_counter()
            b1_result = b1.measure(repo, 11, runs=1, presses=presses, warmup_presses=5, settle_s=2.0)
            size1, t_b = flood.stat().st_size, time.perf_counter()
            result["b1"] = b1_result
            result["flood_during_b1_mb_per_s"] = (size1 - size0) / 1e6 / (t_b - t_a)
    return result


def row(r: dict[str, Any]) -> list[Any]:
    b = r.get("b1") or {}
    nan = float("nan")
    return [r.get("traffic", "plain"), r["lines"], r["mb"], r["lane_mb_per_s"], r["sim_to_file_mb_per_s"], r["lost"],
            b.get("cursor_p50_ms", nan), b.get("cursor_p95_ms", nan), b.get("output_p95_ms", nan),
            r.get("flood_during_b1_mb_per_s", nan)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench b8", description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=None, help="10,000,000 (plain) or 20,000 (a recording)")
    p.add_argument("--presses", type=int, default=100)
    p.add_argument("--no-b1", action="store_true")
    p.add_argument("--out", default=None)
    p.add_argument("--traffic", type=traffic_arg, default="plain",
                   help="what the lanes print: the sim's lines, or a real CLI's recording (tests/bench/traffic)")
    args = p.parse_args(argv)
    if args.lines is None:
        args.lines = 10_000_000 if args.traffic == "plain" else 20_000
    result = measure(args.lines, args.presses, not args.no_b1, args.traffic)
    return publish("b8", vars(args), [result], HEADERS, row, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
