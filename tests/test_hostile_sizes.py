"""Work is bounded by size, whatever an agent writes (issue 28, item 7).

A real agent writes a 20 GB sparse file (and a big change to a tracked file) in its worktree: `diff`,
`diff --stat`, `diff --json`, the dashboard's diff view, `check` and `accept --dry-run` answer at
once, the big files summarised (their size, "too large to show") and their digests bounded. The
bound is checked by what the commands read, never by a stopwatch: each command runs with a timeout
far below what reading 20 GB takes, and the diff text names the size instead of any content.

`plan check` is linear in the plan: the Python lines it executes (a `sys.settrace` counter) for a
plan four times larger are about four times as many, never the sixteen a pairwise pass would take.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from lanes_tui.engine.config.settings import parse_config
from lanes_tui.engine.git.review_tree import snapshot_commit
from lanes_tui.engine.git.views import lane_diff as view_diff
from lanes_tui.engine.plans.validate import check_report, load_plan
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.conftest import git
from tests.helpers import cli, run_lane, status, wait_state, write_config

HUGE = 20 * 1024 ** 3
#: The agent: a 20 GB sparse file, a tracked file grown past the limit, and an ordinary edit.
BIG_WRITER = """\
import pathlib
with open("huge.bin", "wb") as handle:
    handle.truncate(HUGE)
pathlib.Path("README.md").write_text("# project\\n" + "x" * 40_000_000 + "\\n")
pathlib.Path("small.txt").write_text("an ordinary file\\n")
print("wrote", flush=True)
"""


def test_a_20_gb_file_is_summarised_and_nothing_reads_it(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")
    agent = tmp_path / "big.py"
    agent.write_text(BIG_WRITER.replace("HUGE", str(HUGE)))
    write_config(repo, extra=f'[providers.big]\nargv = ["{{python}}", "{agent}"]\nprompt = "arg"\n')
    lane = run_lane(repo, "go", lane_id="big", extra=("--lane", "big"))
    assert wait_state(repo, lane, timeout=60) == f"{lane} ready OK"  # its own gates and packet: at once
    worktree = Path(status(repo, lane)["worktree"])
    assert (worktree / "huge.bin").stat().st_size == HUGE

    # Reading 20 GB takes tens of seconds here (hashing it more); each command gets far less.
    stat = cli(repo, "diff", lane, "--stat", timeout=20)
    assert stat.returncode == 0, stat.stderr
    assert "huge.bin  too large to show (20.0 GiB)" in stat.stdout, stat.stdout
    assert "README.md  too large to show (38 MiB)" in stat.stdout and "small.txt  +1 -0" in stat.stdout
    text = cli(repo, "diff", lane, timeout=20).stdout
    assert "# huge.bin: 21474836480 bytes, too large to show" in text and "an ordinary file" in text
    assert len(text) < 10_000  # the 40 MB of x are not in it either
    found = json.loads(cli(repo, "diff", lane, "--json", timeout=20).stdout)
    huge = next(f for f in found["files"] if f["path"] == "huge.bin")
    assert (huge["too_large"], huge["size"], "# huge.bin: 21474836480 bytes" in huge["diff"]) == (True, HUGE, True)
    assert huge["digest"].startswith("sha256:")
    again = json.loads(cli(repo, "diff", lane, "--json", timeout=20).stdout)
    assert again["digest"] == found["digest"]  # bounded, and still the same for the same files
    assert cli(repo, "check", lane, timeout=30).returncode == 0
    assert cli(repo, "accept", lane, "--dry-run", timeout=30).returncode == 0
    shown = view_diff(LaneStore(StatePaths(repo)).read(lane))  # the dashboard's diff view
    assert "huge.bin: 21474836480 bytes, too large to show" in shown and len(shown) < 10_000


def _plan_text(count: int) -> str:
    """A plan of `count` tickets: a chain of blockers (as many waves as tickets), two scope entries each."""
    parts = ['[plan]\nname = "big"\n']
    for i in range(count):
        blockers = f'blockers = ["t{i - 1}"]\n' if i else ""
        parts.append(f'[[tickets]]\nid = "t{i}"\ntitle = "ticket {i}"\nprompt = "say {i}"\n'
                     f'scope = ["src/m{i}/", "docs/d{i}.md"]\n{blockers}')
    return "\n".join(parts)


def _lines_run(action: Callable[[], Any]) -> int:
    """How many Python lines `action` executes (every frame, the standard library's too)."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        return local

    sys.settrace(on_call)
    try:
        action()
    finally:
        sys.settrace(None)
    return count


def test_plan_check_is_linear_in_the_plan(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    config = parse_config("", path=None, repo=repo)
    costs = {}
    for count in (150, 600):
        plan_file = repo / f"plan-{count}.toml"
        plan_file.write_text(_plan_text(count))
        report: list[str] = []
        costs[count] = _lines_run(lambda f=plan_file, r=report: r.extend(check_report(load_plan(f, repo, config))))
        assert report[0] == f"plan big: {count} tickets in {count} waves"
    ratio = costs[600] / costs[150]
    assert ratio < 5, f"4x the tickets cost {ratio:.1f}x the lines: {costs}"


def test_the_reviewers_snapshot_leaves_a_huge_file_out(repo: Path) -> None:
    (repo / "huge.bin").write_bytes(b"")
    with open(repo / "huge.bin", "r+b") as handle:
        handle.truncate(HUGE)
    (repo / "small.txt").write_text("kept\n")
    (repo / "calc.py").write_text("changed\n")
    commit = snapshot_commit(repo, "big-a1")
    tree = git(repo, "ls-tree", "-r", "--name-only", commit).split()
    assert "small.txt" in tree and "huge.bin" not in tree  # never added: git would have read 20 GB
    assert git(repo, "show", f"{commit}:calc.py") == "changed"
