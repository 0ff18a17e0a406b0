"""What the kernel's confinement costs an agent's start: the same commands started with the lane's
Landlock ruleset applied between fork and exec, and without it, alternately.

`python -m tests.bench.landlock_starts [--runs 21]`

The ruleset is the one a lane's supervisor builds for its agent (`lanes.confine.confine`, kind
"agent", the sim preset's writable folders), applied by its `preexec` as the supervisor passes it; the
other side gets a no-op `preexec_fn`, so both fork the same way. Each command is started `--runs` times
per side, on and off in turn (the order swapped every run), after two untimed starts of each; the
figures are medians, in ms, from the fork to the first byte on stdout and to the exit. A Python agent
opens about 90 files and looks up about 350 paths at start (`strace -f`); Landlock checks the opens
(the truncate right makes it walk each opened file's path), not the lookups, so what it adds is per
open, not per start. (docs/benchmarks.md, "The ruleset's cost to a launch".)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.lanes.confine import confine, provider_writable
from tests.bench.env import machine_info

COMMANDS: dict[str, list[str]] = {
    "/bin/echo x": ["/bin/echo", "x"],
    "python -S -c print": [sys.executable, "-S", "-c", "print('x')"],
    "python -c print": [sys.executable, "-c", "print('x')"],
    "the sim agent (say one line)": [sys.executable, "-m", "lanes_tui.engine.sim", "--prompt", "say first byte"],
}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args], cwd=cwd,
                   check=True, capture_output=True)


def start_once(argv: list[str], preexec: Callable[[], None], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Milliseconds from the fork to the first byte on stdout, and to the exit."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            preexec_fn=preexec, env=env, cwd=cwd, start_new_session=True)
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    first_at = time.perf_counter()
    proc.stdout.read()
    proc.wait()
    if not first:
        raise RuntimeError(f"{argv[0]} printed nothing (exit {proc.returncode})")
    return (first_at - started) * 1000, (time.perf_counter() - started) * 1000


def measure(runs: int) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="lanes-bench-landlock-") as tmp:
        root = Path(tmp)
        repo, worktree = root / "repo", root / "lane"
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
        (repo / "a.txt").write_text("x\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "start")
        _git(repo, "worktree", "add", "-q", "-b", "lane/bench-a1", str(worktree))
        fence = confine(repo, "bench-a1", worktree, kind="agent", allowed_uncontained=False,
                        writable=provider_writable(PRESETS["sim"].writable, dict(os.environ)))
        try:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env.update(fence.env())
            applied = fence.preexec(lambda: None)
            if applied is None:
                raise RuntimeError(f"this kernel cannot confine: {fence.reason}")
            sides: dict[str, Callable[[], None]] = {"on": applied, "off": lambda: None}
            results = []
            for name, argv in COMMANDS.items():
                taken: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
                for side in ("on", "off", "on", "off"):  # untimed: caches warm on both sides
                    start_once(argv, sides[side], env, worktree)
                for i in range(runs):
                    for side in (("on", "off") if i % 2 == 0 else ("off", "on")):
                        taken[side].append(start_once(argv, sides[side], env, worktree))
                first = {side: statistics.median(t[0] for t in v) for side, v in taken.items()}
                done = {side: statistics.median(t[1] for t in v) for side, v in taken.items()}
                results.append({"command": name, "first_on_ms": first["on"], "first_off_ms": first["off"],
                                "exit_on_ms": done["on"], "exit_off_ms": done["off"]})
            return results
        finally:
            fence.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.landlock_starts", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args(argv)
    info = machine_info()
    print(f"load at start {info['load_avg_at_start']}; medians of {args.runs} starts per side, ms")
    print(f"{'command':30} {'first on':>9} {'off':>7} {'diff':>7} {'exit on':>9} {'off':>7} {'diff':>7}")
    for r in measure(args.runs):
        f_on, f_off, e_on, e_off = (float(r[k]) for k in ("first_on_ms", "first_off_ms", "exit_on_ms", "exit_off_ms"))
        print(f"{r['command']:30} {f_on:9.2f} {f_off:7.2f} {f_on - f_off:+7.2f} {e_on:9.2f} {e_off:7.2f} "
              f"{e_on - e_off:+7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
