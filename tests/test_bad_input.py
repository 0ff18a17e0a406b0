"""Bad input: one clear line on stderr, a non-zero exit, and nothing created."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.helpers import cli, write_config


def _nothing_created(repo: Path) -> None:
    lanes = repo / ".lanes" / "state" / "lanes"
    assert not lanes.exists() or not any(lanes.iterdir()), "a lane folder was created"
    assert git(repo, "branch", "--list", "lane/*") == "", "a lane branch was created"
    worktrees = repo.parent / "worktrees"
    assert not worktrees.exists() or not any(p for p in worktrees.rglob("*") if p.is_dir() and
                                             (p / ".git").exists()), "a worktree was created"
    assert git(repo, "worktree", "list").count("\n") == 0


def _one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("lanes-tui: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_malformed_toml(repo: Path) -> None:
    path = repo / ".lanes" / "config.toml"
    path.parent.mkdir()
    path.write_text("[lanes]\nmax_parallel = 6\nidle_timeout_s = = 3\n")
    line = _one_line_error(cli(repo, "run", "--prompt", "say hi"), "config.toml:3")
    assert "—" in line  # a fix follows the problem
    _nothing_created(repo)


def test_wrong_value_names_key_and_line(repo: Path) -> None:
    path = repo / ".lanes" / "config.toml"
    path.parent.mkdir()
    path.write_text("# mine\n[lanes]\nmax_parallel = 0\n")
    _one_line_error(cli(repo, "run", "--prompt", "say hi"), "lanes.max_parallel", "config.toml:3")
    _nothing_created(repo)


def test_unknown_provider(repo: Path) -> None:
    write_config(repo)
    _one_line_error(cli(repo, "run", "--prompt", "say hi", "--lane", "nosuchagent"), "nosuchagent")
    _nothing_created(repo)


def test_unknown_provider_in_chain(repo: Path) -> None:
    write_config(repo, chains='backend = ["sim", "ghostly"]')
    _one_line_error(cli(repo, "run", "--prompt", "say hi"), "ghostly")
    _nothing_created(repo)


def test_unknown_task_type(repo: Path) -> None:
    write_config(repo)
    _one_line_error(cli(repo, "run", "--prompt", "say hi", "--type", "frontendz"), "frontendz")
    _nothing_created(repo)


@pytest.mark.parametrize("bad_id", ["a/b", "..", "../escape", "x y", "a.b", "-" * 70, ""])
def test_invalid_ids(repo: Path, bad_id: str) -> None:
    write_config(repo)
    _one_line_error(cli(repo, "run", "--prompt", "say hi", f"--id={bad_id}"), "invalid task id")
    _nothing_created(repo)


@pytest.mark.parametrize("bad_id", ["a/b", "../x", "x..y/z"])
def test_invalid_lane_id_in_status_and_wait(repo: Path, bad_id: str) -> None:
    write_config(repo)
    _one_line_error(cli(repo, "status", bad_id), "invalid lane id")
    _one_line_error(cli(repo, "wait", bad_id, "--timeout", "1"), "invalid lane id")


def test_worktree_root_inside_repository(repo: Path) -> None:
    path = repo / ".lanes" / "config.toml"
    path.parent.mkdir()
    path.write_text(f'[lanes]\nworktree_root = "{repo / "wt"}"\n[chains]\nbackend = ["sim"]\n')
    _one_line_error(cli(repo, "run", "--prompt", "say hi"), "worktree_root")
    _nothing_created(repo)
    assert not (repo / "wt").exists()


def test_outside_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = subprocess.run([sys.executable, "-m", "lanes_tui.app", "run", "--prompt", "say hi"], cwd=plain,
                          capture_output=True, text=True)
    _one_line_error(proc, "not inside a git repository")
    assert list(plain.iterdir()) == []


def test_empty_prompt(repo: Path) -> None:
    write_config(repo)
    _one_line_error(cli(repo, "run", "--prompt", "   "), "prompt is empty")
    _nothing_created(repo)


def test_duplicate_lane_id(repo: Path) -> None:
    write_config(repo)
    first = cli(repo, "run", "--prompt", "say hi", "--id", "twice")
    assert first.returncode == 0, first.stderr
    _one_line_error(cli(repo, "run", "--prompt", "say hi", "--id", "twice"), "already exists")
    cli(repo, "wait", "twice-a1", "--timeout", "60", check=True)


def test_missing_plan_phase(repo: Path) -> None:
    write_config(repo)
    plan = repo / "plan.md"
    plan.write_text("# plan\n## Phase 1\nsay one\n## Phase 2\nsay two\n")
    _one_line_error(cli(repo, "run", "--plan", str(plan), "--phase", "7"), "phases found: 1, 2")
    _nothing_created(repo)


def test_unknown_state_in_wait(repo: Path) -> None:
    write_config(repo)
    _one_line_error(cli(repo, "wait", "x-a1", "--until", "finished"), "finished")
