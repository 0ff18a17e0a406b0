"""B6: accept — commit + fast-forward + cleanup — against the same raw git commands.

`python -m tests.bench b6 [--files 5000] [--commits 1000] [--changed 50] [--runs 5]`

In a repository of `--files` files and `--commits` commits (`tests.bench.bigrepo`, no gates
configured: "gates excluded"), each run, one after the other so every accept is a pure fast-forward:
- **lane**: a sim lane rewrites `--changed` tracked files and exits; once it is `ready`, the
  engine's `Accept(...).run()` (what `lanes-tui accept` does: lock, journal, plan, commit,
  fast-forward of the checked-out target, worktree removal, packet and state) is timed;
- **raw**: a worktree cut from the new tip with the same number of files rewritten (untimed), then
  timed: `git add -A`, `git commit -q`, `git merge --ff-only -q` in the lead checkout,
  `git worktree remove --force`, `git branch -D`.
Medians over `--runs`; ratio = lane / raw (target ≤ 1.3).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions.accept import Accept
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.model import SETTLED_STATES
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.bench.bigrepo import BigRepo, path_of
from tests.bench.report import median, publish

HEADERS = ("files", "changed", "raw git s", "accept s", "ratio")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _changes(run: int, changed: int, files: int) -> list[tuple[str, str]]:
    return [(path_of((run * changed + k) % files), f"changed-by-run-{run}-{k}") for k in range(changed)]


def measure(files: int, commits: int, changed: int, runs: int) -> dict[str, Any]:
    raw_s: list[float] = []
    accept_s: list[float] = []
    with BigRepo(capacity=runs + 2, files=files, commits=commits) as world:
        repo = world.repo
        config = load_config(repo)
        store = LaneStore(StatePaths(repo))
        for i in range(runs):
            # lane
            script = "Benchmark lane: change files.\n" + "".join(
                f"write {p} {text}\n" for p, text in _changes(2 * i, changed, files))
            record = launch_lane(repo, config, LaunchRequest(prompt=script, slug=f"b6-{i}", allow_load=True))
            world.lanes.append(record.id)
            end = time.monotonic() + 120
            # `exited` comes first, `ready` once the supervisor's after-run steps are done.
            while (state := store.read(record.id).state) not in SETTLED_STATES or state == "exited":
                if time.monotonic() > end:
                    raise RuntimeError(f"lane {record.id} never settled ({state})")
                time.sleep(0.05)
            if state != "ready":
                raise RuntimeError(f"lane {record.id} ended {state}, not ready: {store.read(record.id).state_reason}")
            time.sleep(0.5)  # let the supervisor finish writing and exit
            t0 = time.perf_counter()
            outcome = asyncio.run(Accept(repo, config, record.id).run(message=None, override=None))
            accept_s.append(time.perf_counter() - t0)
            if outcome.state != "accepted":
                raise RuntimeError(f"accept of {record.id}: {outcome.state}: {outcome.message}")
            # raw
            wt = world.root / f"raw-{i}"
            _git(repo, "worktree", "add", "-q", "-b", f"raw-{i}", str(wt), "programme")
            for p, text in _changes(2 * i + 1, changed, files):
                (wt / p).write_text(text + "\n")
            t0 = time.perf_counter()
            _git(wt, "add", "-A")
            _git(wt, "commit", "-q", "--no-verify", "-m", f"raw {i}")
            _git(repo, "merge", "--ff-only", "-q", f"raw-{i}")
            _git(repo, "worktree", "remove", "--force", str(wt))
            _git(repo, "branch", "-D", f"raw-{i}")
            raw_s.append(time.perf_counter() - t0)
            print(f"run {i + 1}: accept {accept_s[-1]:.3f}s, raw {raw_s[-1]:.3f}s", file=sys.stderr, flush=True)
    raw, acc = median(raw_s), median(accept_s)
    return {"files": files, "commits": commits, "changed": changed, "runs": runs, "raw_s": raw_s,
            "accept_s": accept_s, "raw_median_s": raw, "accept_median_s": acc, "ratio": acc / raw}


def row(r: dict[str, Any]) -> list[Any]:
    return [r["files"], r["changed"], r["raw_median_s"], r["accept_median_s"], r["ratio"]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench b6", description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=5000)
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--changed", type=int, default=50)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    result = measure(args.files, args.commits, args.changed, args.runs)
    return publish("b6", vars(args), [result], HEADERS, row, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
