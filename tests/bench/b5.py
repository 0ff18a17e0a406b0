"""B5: lane launch — worktree + supervisor + first agent byte — against a raw `git worktree add`.

`python -m tests.bench b5 [--files 5000] [--commits 1000] [--runs 5] [--landlock on|off] [--fork-server cold|warm]`

In a repository of `--files` files and `--commits` commits (`tests.bench.bigrepo`), alternately:
- **raw**: `git worktree add -q -b NAME PATH programme` (removed again outside the timing);
- **lane**: the engine's `launch_lane` (what `lanes-tui run` does: record, worktree, branch, detached
  supervisor) with a sim prompt that prints one line, timed until the lane's `output.log` holds that
  line (polled every 2 ms): the agent's own first bytes, not the supervisor's header before them, which
  is written before the agent starts and so hid whatever the agent's start costs. `launch_lane`'s own
  return time is kept too. The lane then runs to its end (settled) and a second passes before the next
  pair, so neither side shares the machine with a previous lane's supervisor.
The figure is the median over `--runs` of each; ratio = lane / raw (target ≤ 1.5). `--landlock off` runs
the lanes without the kernel's confinement, to measure what the ruleset costs a launch.

`--fork-server cold` (the default) is the script as it always ran: each lane finds the repository's fork
server gone (the previous lane ended) and starts one. `--fork-server warm` keeps one lane sleeping for
the whole run, so every measured launch finds the server warm, as a launch beside a running lane does.
Each `launch_lane` is also taken apart (`tests.bench.spans`): its git commands timed apart, and
lanes-tui's own share (`own_ms`: the call's time minus its git) with its named steps.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.git import git_snapshot, lead_checkout, watch, worktrees
from lanes_tui.engine.lanes import fork_client, launcher
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.model import SETTLED_STATES
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.bench.bigrepo import BigRepo
from tests.bench.report import median, publish
from tests.bench.spans import Spans, Taken, describe, medians

PROMPT = "Benchmark lane: say one line.\nsay first byte\n"
#: What the agent prints (its `say`): the first bytes of the agent's own in `output.log`.
AGENT_LINE = b"first byte"
HEADERS = ("files", "commits", "fork server", "raw git worktree add s", "lane launch_lane s", "lane first byte s",
           "ratio", "launch_lane's own ms")
#: The steps of `launch_lane` timed apart (`tests.bench.spans`; one the code does not have is left out).
LAUNCH_SPANS = ((fork_client, "_start_server", "fork server start"),
                (fork_client, "prestart", "fork server started early"),
                (fork_client, "_listening", "fork server: waited to listen"),
                (fork_client, "start_supervisor", "supervisor started"),
                (launcher, "spawn_supervisor", "spawn_supervisor"),
                (lead_checkout, "snapshot", "lead checkout snapshot"),
                (git_snapshot, "snapshot", "git config snapshot"),
                (worktrees, "create_worktree", "create_worktree"),
                (launcher, "fetch_base", "fetch_base"),
                (watch, "record_lane_start", "record_lane_start"),
                (launcher, "copy_into_worktree", "copy_into_worktree"),
                (launcher, "exclude_agent_state", "exclude_agent_state"),
                (LaneStore, "create", "record created"))
#: The warm run's lane that keeps the fork server alive (it has a child) while the others are measured.
HOLDER_PROMPT = "Benchmark lane: keep the fork server warm.\nsleep 3600\n"


def measure(files: int, commits: int, runs: int, landlock: str = "on", fork_server: str = "cold") -> dict[str, Any]:
    raw_s: list[float] = []
    returned_s: list[float] = []
    first_s: list[float] = []
    takes: list[Taken] = []
    caps = {"allow_uncontained": True} if landlock == "off" else {}
    with BigRepo(capacity=runs + 3, files=files, commits=commits) as world, Spans(LAUNCH_SPANS) as spans:
        repo = world.repo
        config = load_config(repo)
        store = LaneStore(StatePaths(repo))
        subprocess.run(["git", "status", "--short"], cwd=repo, capture_output=True, check=True)  # warm caches
        if fork_server == "warm":
            holder = launch_lane(repo, config, LaunchRequest(prompt=HOLDER_PROMPT, slug="b5-holder",
                                                             allow_load=True, caps=caps))
            world.lanes.append(holder.id)
            time.sleep(1.0)
        for i in range(runs):
            path = world.root / f"raw-{i}"
            t0 = time.perf_counter()
            subprocess.run(["git", "worktree", "add", "-q", "-b", f"raw-{i}", str(path), "programme"], cwd=repo,
                           check=True, capture_output=True)
            raw_s.append(time.perf_counter() - t0)
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=repo, check=True,
                           capture_output=True)
            t0 = time.perf_counter()
            with spans.take() as taken:
                record = launch_lane(repo, config, LaunchRequest(prompt=PROMPT, slug=f"b5-{i}", allow_load=True,
                                                                 caps=caps))
            returned_s.append(time.perf_counter() - t0)
            takes.append(taken)
            output = store.lane_paths(record.id).output
            end = t0 + 60
            while not (output.exists() and AGENT_LINE in output.read_bytes()):
                if time.perf_counter() > end:
                    raise RuntimeError(f"lane {record.id} printed nothing in 60 s: {store.read(record.id).state}")
                time.sleep(0.002)
            first_s.append(time.perf_counter() - t0)
            world.lanes.append(record.id)
            # The next pair starts on a quiet machine: this lane's supervisor (its watcher set up on
            # the whole worktree, its after-run steps) must not run during the next raw add.
            while store.read(record.id).state not in SETTLED_STATES:
                if time.perf_counter() > end + 60:
                    raise RuntimeError(f"lane {record.id} never settled")
                time.sleep(0.05)
            time.sleep(1.0)
            print(f"run {i + 1}: raw {raw_s[-1]:.3f}s, lane {first_s[-1]:.3f}s "
                  f"(launch_lane {returned_s[-1]:.3f}s, own {1000 * taken.own_s:.0f} ms)", file=sys.stderr,
                  flush=True)
    raw, lane = median(raw_s), median(first_s)
    own = medians(takes)
    print(describe(f"launch_lane, fork server {fork_server}", own), file=sys.stderr, flush=True)
    return {"files": files, "commits": commits, "runs": runs, "landlock": landlock, "fork_server": fork_server,
            "raw_s": raw_s, "launch_returned_s": returned_s,
            "first_byte_s": first_s, "raw_median_s": raw, "launch_returned_median_s": median(returned_s),
            "first_byte_median_s": lane, "ratio": lane / raw,
            "launch_own": own, "launch_takes": [t.as_json() for t in takes]}


def row(r: dict[str, Any]) -> list[Any]:
    return [r["files"], r["commits"], r["fork_server"], r["raw_median_s"], r["launch_returned_median_s"],
            r["first_byte_median_s"], r["ratio"], r["launch_own"]["own_ms"]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench b5", description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=5000)
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=None)
    p.add_argument("--landlock", choices=("on", "off"), default="on",
                   help="off: the lanes run without the kernel's confinement (LANES_TUI_LANDLOCK=off)")
    p.add_argument("--fork-server", choices=("cold", "warm"), default="cold",
                   help="warm: one lane sleeps through the run, so each launch finds the fork server running")
    args = p.parse_args(argv)
    if args.landlock == "off":
        os.environ["LANES_TUI_LANDLOCK"] = "off"  # the supervisors inherit it
    result = measure(args.files, args.commits, args.runs, args.landlock, args.fork_server)
    return publish("b5", vars(args), [result], HEADERS, row, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
