"""What the kernel's confinement adds to one lane run: building its fence, and starting under it.

`python -m tests.bench.confine_cost [--runs 30]`

In a throw-away repository with one lane worktree, `--runs` times: `lanes.confine.confine` (the
worktree's git admin folder found from the repository's side, a fresh TMPDIR, the Landlock ruleset
built with claude's preset state), then `/bin/true` started with the ruleset applied between fork
and exec, and once more without it. Medians in milliseconds. B3 and B5 (`--landlock on|off`) measure
the same from the outside: a supervisor's CPU and memory, a launch's time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from lanes_tui.engine.lanes.confine import confine, provider_writable


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args], cwd=cwd,
                   check=True, capture_output=True)


def measure(runs: int) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="lanes-bench-confine-"))
    os.environ["XDG_RUNTIME_DIR"] = str(tmp / "run")
    try:
        repo = tmp / "repo"
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
        (repo / "a.txt").write_text("x\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "initial")
        worktree = tmp / "lane"
        _git(repo, "worktree", "add", "-q", "-b", "lane/bench-a1", str(worktree))
        build, confined, plain = [], [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            fence = confine(repo, "bench-a1", worktree, kind="agent", allowed_uncontained=False,
                            writable=provider_writable(["~/.claude/", "~/.claude.json"]))
            build.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run(["/bin/true"], preexec_fn=fence.preexec(), check=True)
            confined.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run(["/bin/true"], preexec_fn=lambda: None, check=True)
            plain.append(time.perf_counter() - t0)
            fence.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {name: 1000 * statistics.median(values)
            for name, values in (("build_ms", build), ("spawn_confined_ms", confined), ("spawn_plain_ms", plain))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.confine_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    found = measure(args.runs)
    print(f"confine() {found['build_ms']:.2f} ms; a spawn under the ruleset {found['spawn_confined_ms']:.2f} ms, "
          f"without {found['spawn_plain_ms']:.2f} ms (medians of {args.runs})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
