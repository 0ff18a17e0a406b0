"""B5 and B6 with this wave's switches at tiny sizes (issue 33, item 5): the fork server warm, the
kernel's confinement off, gates on the frozen work, the repository's hooks; the launch and the accept
taken apart (`tests.bench.spans`). The report's shape only, never a speed."""

from __future__ import annotations

import math
import subprocess
from typing import Any

import pytest

from tests.bench import b5, b6
from tests.bench.spans import Spans

pytestmark = pytest.mark.slow


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not math.isnan(value) and value > 0


def _taken_apart(summary: dict[str, Any], *steps: str) -> None:
    assert _positive(summary["wall_ms"]) and _positive(summary["git_ms"]) and summary["git_calls"] >= 1
    assert math.isclose(summary["own_ms"] + summary["git_ms"], summary["wall_ms"], rel_tol=0.5)
    for step in steps:
        assert _positive(summary["spans"][step]["wall_ms"]), step


def test_b5_warm_fork_server_without_landlock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANES_TUI_LANDLOCK", "off")
    result = b5.measure(files=50, commits=5, runs=1, landlock="off", fork_server="warm")
    assert result["fork_server"] == "warm" and result["landlock"] == "off"
    _taken_apart(result["launch_own"], "create_worktree", "lead checkout snapshot", "spawn_supervisor")
    assert "fork server: waited to listen" not in result["launch_own"]["spans"]  # the holder lane's answered
    assert b5.row(result)[2] == "warm"


def test_b5_cold_fork_server_starts_one() -> None:
    result = b5.measure(files=50, commits=5, runs=1)
    _taken_apart(result["launch_own"], "fork server started early", "fork server: waited to listen",
                 "supervisor started")
    assert "fork server start" not in result["launch_own"]["spans"]  # the early one served: none started late


def test_b6_hooks_and_gates_on_the_frozen_work() -> None:
    result = b6.measure(files=50, commits=5, changed=3, runs=1, gates=1, hooks=True)
    _taken_apart(result["accept_own"], "plan_accept", "commit_worktree", "hooks (fence, runs, checks)",
                 "fast_forward", "cleanup")
    assert _positive(result["accept_hooks_median_ms"]) and _positive(result["raw_hooks_median_ms"])
    assert _positive(result["freeze"]["wall_ms"]) and result["gates"] == 1
    assert len(b6.row(result)) == len(b6.HEADERS)


def test_b6_without_landlock_and_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANES_TUI_LANDLOCK", "off")
    result = b6.measure(files=50, commits=5, changed=3, runs=1, landlock="off")
    assert result["accept_hooks_median_ms"] == 0 and result["raw_hooks_median_ms"] == 0
    _taken_apart(result["accept_own"], "plan_accept", "commit_worktree", "cleanup")


def test_spans_time_git_apart_and_restore_what_they_wrapped() -> None:
    original = subprocess.run

    class Work:
        @staticmethod
        def step() -> None:
            subprocess.run(["git", "--version"], check=True, capture_output=True)

    with Spans([(Work, "step", "step")]) as spans:
        with spans.take() as taken:
            Work.step()
        Work.step()  # outside a take: not counted
    assert subprocess.run is original and taken.git_calls == 1 and taken.spans["step"].calls == 1
    assert 0 < taken.git_s <= taken.spans["step"].wall_s <= taken.wall_s
