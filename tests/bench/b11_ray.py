"""B11: a lane through the Ray runner against the local runner: launch time and output latency.

`python -m tests.bench.b11_ray [--lanes 3] [--lines 50] [--interval 0.1] [--address ADDR]`

Both runners start the same lane, one at a time, `--lanes` times, in the same repository:

- **launch**: `runner.start()` until it returns the record (local: worktree + detached supervisor;
  Ray: base pushed to the shared remote, actor placed, node-side clone + worktree + supervisor under
  the reaper shim), and until the agent's first line is seen through `runner.output()`.
- **output latency**: the agent (a tiny Python provider) prints `stamp <time.time()>` every
  `--interval` seconds; the reader polls `runner.output()` from its sequence number as fast as it
  returns (every 5 ms when nothing is new) and takes `now - stamp` for each line. All nodes of a
  local cluster are on this machine, so the clocks are one clock. Local: supervisor → `output.log`
  → read. Ray: the same on the node, then one actor call per read into the lead's mirror.

The figures are medians over the lanes (latency: the median and p95 of every line of every lane).
Both latencies include the supervisor's output pump, which rests after a read (`lanes.cadence`: 2 s
while nobody holds a watch lease on the lane, as here, 0.5 s while one does), so a line waits up to
that long there on either runner: what Ray adds is the difference of the two rows.
Without `--address` a local cluster (a head and one worker with two lane slots, token auth off) is
started for the run and torn down after it.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions.runners import LocalRunner
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.lanes.runner import Runner
from tests.bench.report import median, percentile, publish
from tests.helpers import write_config

HEADERS = ("runner", "lanes", "start() s", "first line s", "latency p50 ms", "latency p95 ms", "lines")
STAMP = re.compile(rb"stamp (\d+\.\d+)")


def stamp_provider(lines: int, interval: float) -> str:
    code = (f"import time\\nprint('ready', flush=True)\\nfor i in range({lines}):\\n"
            f"    print('stamp %.6f' % time.time(), flush=True)\\n    time.sleep({interval})\\n")
    return f'[providers.stamp]\nargv = ["{{python}}", "-c", "{code}"]\nprompt = "arg"\nchannel = "plain"\n'


def make_repo(root: Path) -> tuple[Path, Path]:
    """A repository with one commit on main, and a bare remote holding it."""
    repo, remote = root / "project", root / "remote.git"
    repo.mkdir()
    env_git = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], [*env_git, "commit", "-q", "-m", "initial"]):
        if argv[0] == "add":
            (repo / "README.md").write_text("# bench\n")
        subprocess.run(["git", *argv], cwd=repo, check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "push", "-q", str(remote), "main"], cwd=repo, check=True)
    return repo, remote


async def one_lane(runner: Runner, slug: str, lines: int, timeout: float) -> dict[str, Any]:
    started = time.monotonic()
    record = await runner.start(LaunchRequest(prompt="stamps", slug=slug, raw=True))
    start_s = time.monotonic() - started
    seq, first_line_s, latencies, buffer = 0, None, [], b""
    end = time.monotonic() + timeout
    try:
        while len(latencies) < lines and time.monotonic() < end:
            data, seq = await runner.output(record.id, seq, 1 << 20)
            now = time.time()
            if not data:
                await asyncio.sleep(0.005)
                continue
            if first_line_s is None:
                first_line_s = time.monotonic() - started
            buffer += data
            complete, _, buffer = buffer.rpartition(b"\n")
            latencies += [(now - float(m.group(1))) * 1000 for m in STAMP.finditer(complete)]
    finally:
        await runner.stop(record.id)
        await runner.discard(record.id)
    return {"start_s": start_s, "first_line_s": first_line_s, "latencies_ms": latencies}


async def measure(kind: str, runner: Runner, lanes: int, lines: int, timeout: float) -> dict[str, Any]:
    runs = [await one_lane(runner, f"b11-{kind}-{i}", lines, timeout) for i in range(lanes)]
    latencies = [ms for run in runs for ms in run["latencies_ms"]]
    print(f"{kind}: {[round(r['start_s'], 2) for r in runs]} s to start", file=sys.stderr, flush=True)
    return {"runner": kind, "lanes": lanes, "start_s": median([r["start_s"] for r in runs]),
            "first_line_s": median([r["first_line_s"] for r in runs if r["first_line_s"] is not None]),
            "latency_p50_ms": median(latencies), "latency_p95_ms": percentile(latencies, 95),
            "lines": len(latencies)}


def row(result: dict[str, Any]) -> list[Any]:
    return [result["runner"], result["lanes"], result["start_s"], result["first_line_s"],
            result["latency_p50_ms"], result["latency_p95_ms"], result["lines"]]


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    from lanes_tui.engine.remote.ray_runner import RayRunner
    from tests.ray_cluster import local_cluster

    results = []
    with tempfile.TemporaryDirectory(prefix="lanes-b11-") as tmp:
        repo, remote = make_repo(Path(tmp))
        timeout = args.lines * args.interval + 120

        def configure(address: str) -> None:
            runner_table = f'[runner]\nkind = "ray"\naddress = "{address}"\nremote = "{remote}"\n'
            write_config(repo, chains='backend = ["stamp"]', extra=stamp_provider(args.lines, args.interval)
                         + runner_table)

        configure(args.address or "auto")
        results.append(asyncio.run(measure("local", LocalRunner(repo, load_config(repo)), args.lanes, args.lines,
                                           timeout)))
        if args.address:
            ray_runner = RayRunner(repo, load_config(repo), work_root=str(Path(tmp) / "nodes"))
            results.append(asyncio.run(measure("ray", ray_runner, args.lanes, args.lines, timeout)))
            asyncio.run(ray_runner.close())
        else:
            booting = time.monotonic()
            with local_cluster(workers=1) as cluster:
                print(f"local cluster up in {time.monotonic() - booting:.1f}s", file=sys.stderr, flush=True)
                configure(cluster.address)
                ray_runner = RayRunner(repo, load_config(repo), work_root=str(Path(tmp) / "nodes"))
                results.append(asyncio.run(measure("ray", ray_runner, args.lanes, args.lines, timeout)))
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.b11_ray", description=__doc__.splitlines()[0])
    p.add_argument("--lanes", type=int, default=3, help="lanes per runner, one at a time (3)")
    p.add_argument("--lines", type=int, default=50, help="stamped lines per lane (50)")
    p.add_argument("--interval", type=float, default=0.1, help="seconds between two stamps (0.1)")
    p.add_argument("--address", default=None, help="a running cluster (default: a local one for the run)")
    p.add_argument("--out", default=None, help="folder for the JSON (tests/bench/results)")
    args = p.parse_args(argv)
    return publish("b11", vars(args), run(args), HEADERS, row, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
