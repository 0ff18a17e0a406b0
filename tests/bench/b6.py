"""B6: accept — commit + fast-forward + cleanup — against the same raw git commands.

`python -m tests.bench b6 [--files 5000] [--commits 1000] [--changed 50] [--runs 5] [--landlock on|off]
[--gates N] [--hooks]`

In a repository of `--files` files and `--commits` commits (`tests.bench.bigrepo`, no gates
configured: "gates excluded"), each run, one after the other so every accept is a pure fast-forward:
- **lane**: a sim lane rewrites `--changed` tracked files and exits; once it is `ready`, the
  engine's `Accept(...).run()` (what `lanes-tui accept` does: lock, journal, plan, commit of the work
  frozen at the lane's check, fast-forward of the checked-out target, worktree removal, packet and
  state) is timed, and taken apart (`tests.bench.spans`): its git commands timed apart, lanes-tui's own
  share (`own_ms`) and its named steps;
- **raw**: a worktree cut from the new tip with the same number of files rewritten (untimed), then
  timed: `git add -A`, `git commit -q`, `git merge --ff-only -q` in the lead checkout,
  `git worktree remove --force`, `git branch -D`.
- **freeze**: before the raw commit, the lane's freeze before the gates (`git.frozen_work.freeze`, which
  the supervisor's check runs in its own process, outside the accept) timed on the raw worktree.
Medians over `--runs`; ratio = lane / raw (target ≤ 1.3).

`--landlock off` runs the lanes (and the hooks) without the kernel's confinement. `--gates N` configures
N gates that do nothing (`true`), so each lane's check runs gates on its frozen work before `ready`.
`--hooks` installs pre-commit, commit-msg and post-commit hooks that do little (`HOOKS`) in the
repository's hooks folder: the accept runs the first two inside the lane's fence (`commit_hooks`), the raw
`git commit` runs all three (no `--no-verify`). The hooks' own time is reported apart: the accept's from
its `hook` events (each hook's run as a gate step), the raw side's by running the three files once more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions import accept, accept_plan, commit_hooks
from lanes_tui.engine.decisions.accept import Accept
from lanes_tui.engine.git import frozen_work, git_snapshot, lead_checkout, worktrees
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.model import SETTLED_STATES
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.bench.bigrepo import BigRepo, path_of
from tests.bench.env import write_bench_config
from tests.bench.report import median, publish
from tests.bench.spans import Spans, Taken, describe, medians

HEADERS = ("files", "changed", "landlock", "gates", "hooks", "raw git s", "accept s", "ratio", "accept's own ms",
           "accept hooks ms", "raw hooks ms", "freeze ms")
#: The steps of `Accept(...).run()` timed apart.
ACCEPT_SPANS = ((accept, "finish_interrupted_accepts", "finish_interrupted_accepts"),
                (accept, "fetch_base", "fetch_base"),
                (accept, "plan_accept", "plan_accept"),
                (git_snapshot, "refuse_if_changed", "git config compared"),
                (lead_checkout, "changed_since", "lead checkout compared"),
                (worktrees, "worktree_digest", "worktree digest"),
                (accept_plan, "frozen_problem", "frozen ref checked"),
                (accept, "commit_worktree", "commit_worktree"),
                (commit_hooks.CommitHooks, "__call__", "hooks (fence, runs, checks)"),
                (commit_hooks, "gates_fence", "hooks' fence"),
                (accept, "fast_forward", "fast_forward"),
                (accept, "remove_lane_worktree", "remove_lane_worktree"),
                (Accept, "_cleanup", "cleanup"))
#: Hooks that do little: what a team's hooks cost at the least (a spawn of the shell each).
HOOKS = {"pre-commit": "#!/bin/sh\nexit 0\n", "commit-msg": "#!/bin/sh\ntest -s \"$1\"\n",
         "post-commit": "#!/bin/sh\nexit 0\n"}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _changes(run: int, changed: int, files: int) -> list[tuple[str, str]]:
    return [(path_of((run * changed + k) % files), f"changed-by-run-{run}-{k}") for k in range(changed)]


def install_hooks(repo: Path) -> Path:
    folder = repo / ".git" / "hooks"
    folder.mkdir(exist_ok=True)
    for name, text in HOOKS.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return folder


def configure_gates(repo: Path, capacity: int, sample_s: float, gates: int) -> None:
    path = write_bench_config(repo, capacity, sample_s)
    path.write_text(path.read_text().replace("commands = []", "commands = " + json.dumps(["true"] * gates)))


def _hook_ms(store: LaneStore, lane_id: str) -> float:
    """The accept's hooks as each ran (its `hook` events' durations), in ms."""
    total = 0.0
    for line in store.lane_paths(lane_id).events.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "hook" and isinstance(event.get("duration_s"), int | float):
            total += 1000 * float(event["duration_s"])
    return total


def _raw_hooks_ms(folder: Path, worktree: Path) -> float:
    """The three hook files run once more as git runs them, in ms: the raw commit's share of hooks."""
    message = worktree.parent / f"{worktree.name}.msg"
    message.write_text("raw\n")
    t0 = time.perf_counter()
    for name in HOOKS:
        argv = [str(folder / name), str(message)] if name == "commit-msg" else [str(folder / name)]
        subprocess.run(argv, cwd=worktree, check=True, capture_output=True)
    spent = 1000 * (time.perf_counter() - t0)
    message.unlink()
    return spent


def _ready(store: LaneStore, lane_id: str) -> None:
    end = time.monotonic() + 120
    # `exited` comes first, `ready` once the supervisor's after-run steps are done.
    while (state := store.read(lane_id).state) not in SETTLED_STATES or state == "exited":
        if time.monotonic() > end:
            raise RuntimeError(f"lane {lane_id} never settled ({state})")
        time.sleep(0.05)
    if state != "ready":
        raise RuntimeError(f"lane {lane_id} ended {state}, not ready: {store.read(lane_id).state_reason}")
    time.sleep(0.5)  # let the supervisor finish writing and exit


def measure(files: int, commits: int, changed: int, runs: int, *, landlock: str = "on", gates: int = 0,
            hooks: bool = False) -> dict[str, Any]:
    raw_s: list[float] = []
    accept_s: list[float] = []
    takes: list[Taken] = []
    hook_ms: list[float] = []
    raw_hook_ms: list[float] = []
    freezes: list[Taken] = []
    caps = {"allow_uncontained": True} if landlock == "off" else {}
    with BigRepo(capacity=runs + 2, files=files, commits=commits) as world, Spans(ACCEPT_SPANS) as spans:
        repo = world.repo
        if gates:
            configure_gates(repo, world.capacity, world.sample_s, gates)
        folder = install_hooks(repo) if hooks else None
        config = load_config(repo)
        store = LaneStore(StatePaths(repo))
        for i in range(runs):
            # lane
            script = "Benchmark lane: change files.\n" + "".join(
                f"write {p} {text}\n" for p, text in _changes(2 * i, changed, files))
            record = launch_lane(repo, config, LaunchRequest(prompt=script, slug=f"b6-{i}", allow_load=True,
                                                             caps=caps))
            world.lanes.append(record.id)
            _ready(store, record.id)
            t0 = time.perf_counter()
            with spans.take() as taken:
                outcome = asyncio.run(Accept(repo, config, record.id).run(message=None, override=None))
            accept_s.append(time.perf_counter() - t0)
            takes.append(taken)
            if outcome.state != "accepted":
                raise RuntimeError(f"accept of {record.id}: {outcome.state}: {outcome.message}")
            hook_ms.append(_hook_ms(store, record.id))
            # raw
            wt = world.root / f"raw-{i}"
            _git(repo, "worktree", "add", "-q", "-b", f"raw-{i}", str(wt), "programme")
            for p, text in _changes(2 * i + 1, changed, files):
                (wt / p).write_text(text + "\n")
            base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=wt, check=True, capture_output=True,
                                  text=True).stdout.strip()
            with spans.take() as froze:
                frozen_work.freeze(repo, wt, f"raw-{i}", 1, base)
            freezes.append(froze)
            frozen_work.drop_frozen_ref(repo, f"raw-{i}")
            t0 = time.perf_counter()
            _git(wt, "add", "-A")
            _git(wt, "commit", "-q", *(() if hooks else ("--no-verify",)), "-m", f"raw {i}")
            _git(repo, "merge", "--ff-only", "-q", f"raw-{i}")
            raw_s.append(time.perf_counter() - t0)
            raw_hook_ms.append(_raw_hooks_ms(folder, repo) if folder is not None else 0.0)
            t0 = time.perf_counter()
            _git(repo, "worktree", "remove", "--force", str(wt))
            _git(repo, "branch", "-D", f"raw-{i}")
            raw_s[-1] += time.perf_counter() - t0
            print(f"run {i + 1}: accept {accept_s[-1]:.3f}s (own {1000 * taken.own_s:.0f} ms, hooks "
                  f"{hook_ms[-1]:.0f} ms), raw {raw_s[-1]:.3f}s, freeze {1000 * froze.wall_s:.0f} ms",
                  file=sys.stderr, flush=True)
    raw, acc = median(raw_s), median(accept_s)
    own = medians(takes)
    print(describe("Accept(...).run()", own), file=sys.stderr, flush=True)
    frozen = medians(freezes)
    return {"files": files, "commits": commits, "changed": changed, "runs": runs, "landlock": landlock,
            "gates": gates, "hooks": hooks, "raw_s": raw_s, "accept_s": accept_s, "raw_median_s": raw,
            "accept_median_s": acc, "ratio": acc / raw, "accept_own": own,
            "accept_takes": [t.as_json() for t in takes], "accept_hooks_ms": hook_ms,
            "accept_hooks_median_ms": median(hook_ms), "raw_hooks_ms": raw_hook_ms,
            "raw_hooks_median_ms": median(raw_hook_ms), "freeze": frozen}


def row(r: dict[str, Any]) -> list[Any]:
    return [r["files"], r["changed"], r["landlock"], r["gates"], "yes" if r["hooks"] else "no", r["raw_median_s"],
            r["accept_median_s"], r["ratio"], r["accept_own"]["own_ms"], r["accept_hooks_median_ms"],
            r["raw_hooks_median_ms"], r["freeze"]["wall_ms"]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench b6", description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=5000)
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--changed", type=int, default=50)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=None)
    p.add_argument("--landlock", choices=("on", "off"), default="on",
                   help="off: the lanes and hooks run without the kernel's confinement (LANES_TUI_LANDLOCK=off)")
    p.add_argument("--gates", type=int, default=0, help="N gates that do nothing, run on each lane's frozen work")
    p.add_argument("--hooks", action="store_true",
                   help="pre-commit, commit-msg and post-commit hooks that do little in the repository")
    args = p.parse_args(argv)
    if args.landlock == "off":
        os.environ["LANES_TUI_LANDLOCK"] = "off"  # the supervisors inherit it
    result = measure(args.files, args.commits, args.changed, args.runs, landlock=args.landlock, gates=args.gates,
                     hooks=args.hooks)
    return publish("b6", vars(args), [result], HEADERS, row, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
