"""The lane diff with many untracked files (issue 17, item 4): one pass against one diff per file.

A throwaway repository (one commit, 20 tracked files, one of them edited) gets N new untracked
files of a few lines each; then `decisions.lane_diff.worktree_files` (what `lanes-tui diff`, the
review and accept read) and `git.views.lane_diff` (the dashboard's Diff view) are timed, each the
median of `--runs` runs. `--old` also times the per-file path the engine used before (every file
its own `git diff --no-index`), forced by making the one pass fail, for comparison.

    .venv/bin/python -m tests.bench.lane_diff [--sizes 400,4000] [--runs 5] [--old]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from unittest import mock

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions import lane_diff as decisions_diff
from lanes_tui.engine.git import views


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(root: Path, untracked: int) -> tuple[Path, str]:
    """A repository with one commit and `untracked` new files under `new/`; (path, base sha)."""
    repo = root / f"repo{untracked}"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for i in range(20):
        (repo / f"t{i}.txt").write_text(f"tracked {i}\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "base")
    (repo / "t0.txt").write_text("tracked 0\nedited\n")
    for i in range(untracked):
        folder = repo / "new" / f"d{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.py").write_text(f"x = {i}\n" * 5)
    return repo, _git(repo, "rev-parse", "HEAD")


def median_s(action: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _refuse(*_args: object, **_kwargs: object) -> dict[str, bytes]:
    raise LanesError("benchmark: the per-file path")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="400,4000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--old", action="store_true", help="also time one git diff per file (slow)")
    args = parser.parse_args(argv)
    print(f"| untracked files | lane diff (one pass) | dashboard diff view | per file (before) |  runs: {args.runs}")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="lanes-bench-diff-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            repo, base = make_repo(Path(tmp), size)
            files = decisions_diff.worktree_files(repo, base)
            assert len(files) == size + 1, len(files)
            record = cast(Any, SimpleNamespace(worktree=str(repo), base_sha=base))
            one = median_s(partial(decisions_diff.worktree_files, repo, base), args.runs)
            view = median_s(partial(views.lane_diff, record), args.runs)
            old = "-"
            if args.old:
                with mock.patch.object(decisions_diff, "one_pass_patches", _refuse):
                    old = f"{median_s(partial(decisions_diff.worktree_files, repo, base), 1):.2f} s"
            print(f"| {size} | {one:.3f} s | {view:.3f} s | {old} |")


if __name__ == "__main__":
    main()
