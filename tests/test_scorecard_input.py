"""The scorecard's task files against real repositories, and its refusals (issue 15, item 5).

A task may name a local git repository at a pinned commit (`source`, `commit`) and `setup` steps; a
wrong commit, a failing step, a malformed file, an unknown or unfinished lane and a missing baseline
are each one line on stderr and exit 2, never a traceback, and nothing half-made is left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git
from tests.helpers import cli


def _source_repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository with two commits; returns it and the first commit (the one a task pins)."""
    src = tmp_path / "upstream"
    src.mkdir()
    git(src, "init", "-q", "-b", "trunk")
    (src / "version.txt").write_text("one\n")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "one")
    pinned = git(src, "rev-parse", "HEAD")
    (src / "version.txt").write_text("two\n")
    git(src, "commit", "-q", "-am", "two")
    return src, pinned


def _task_file(folder: Path, commit: str, *, setup: str = "", name: str = "pinned") -> Path:
    """A task on `../upstream` (relative to the task file), whose check needs the pinned commit,
    the setup's file and the agent's line."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nsource = "../upstream"\ncommit = "{commit}"\n{setup}\n'
        'prompt = """\nappend notes.txt "agent was here"\n"""\n'
        'check = ["{python}", "-c", "import pathlib as p; '
        "assert p.Path('version.txt').read_text() == 'one\\\\n'; "
        "assert p.Path('seed.txt').read_text() == 'seeded'; "
        "assert 'agent was here' in p.Path('notes.txt').read_text()\"]\n")
    return path


def _one_line(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


SEED = 'setup = [["{python}", "-c", "open(\'seed.txt\', \'w\').write(\'seeded\')"]]'


def test_a_source_repository_at_its_pinned_commit_with_setup(repo: Path, tmp_path: Path) -> None:
    _, pinned = _source_repo(tmp_path)
    task = _task_file(tmp_path / "tasks", pinned, setup=SEED)
    started = json.loads(cli(repo, "scorecard", "prepare", str(task), "--work-dir", str(tmp_path / "work"),
                             "--json", check=True).stdout)
    assert started["commit"] == pinned and started["lane"] == "pinned-r1-a1"
    task_repo = Path(started["repo"])
    assert task_repo.parent == tmp_path / "work"
    # The setup's file is committed on top of the pinned commit, so the lane's worktree starts with it.
    assert git(task_repo, "rev-parse", "HEAD~1") == pinned
    assert git(task_repo, "show", "HEAD:seed.txt") == "seeded"
    assert cli(task_repo, "wait", started["lane"], "--timeout", "90").returncode == 0
    entry = json.loads(cli(repo, "scorecard", "record", started["lane"], "--json", check=True).stdout)
    assert entry["task"] == "pinned" and entry["finished"] and entry["passed"] and entry["first_try"], entry
    assert entry["label"] == "latest"


def test_a_wrong_commit_is_one_line_naming_it(repo: Path, tmp_path: Path) -> None:
    _source_repo(tmp_path)
    task = _task_file(tmp_path / "tasks", "0123456789abcdef0123456789abcdef01234567")
    work = tmp_path / "work"
    proc = cli(repo, "scorecard", "prepare", str(task), "--work-dir", str(work))
    _one_line(proc, "commit 0123456789abcdef0123456789abcdef01234567 is not in", str(tmp_path / "upstream"))
    assert list(work.iterdir()) == []  # nothing half-made left


def test_a_failing_setup_step_is_one_line(repo: Path, tmp_path: Path) -> None:
    _, pinned = _source_repo(tmp_path)
    task = _task_file(tmp_path / "tasks", pinned,
                      setup='setup = [["{python}", "-c", "import sys; sys.exit(\'no seed today\')"]]')
    work = tmp_path / "work"
    _one_line(cli(repo, "scorecard", "prepare", str(task), "--work-dir", str(work)),
              "setup step", "failed (exit 1): no seed today")
    assert list(work.iterdir()) == []
    missing = _task_file(tmp_path / "tasks", pinned, setup='setup = [["no-such-command-here"]]', name="gone")
    _one_line(cli(repo, "scorecard", "prepare", str(missing), "--work-dir", str(work)), "could not start")


def test_a_source_that_is_no_repository_or_has_no_commit(repo: Path, tmp_path: Path) -> None:
    task = _task_file(tmp_path / "tasks", "abc123")
    _one_line(cli(repo, "scorecard", "prepare", str(task)), "is not a git repository")
    unpinned = tmp_path / "tasks" / "unpinned.toml"
    unpinned.write_text('name = "u"\nsource = "../upstream"\nprompt = "say hi"\ncheck = ["true"]\n')
    _one_line(cli(repo, "scorecard", "prepare", str(unpinned)), "`source` needs `commit`")


@pytest.mark.parametrize(("text", "words"), [
    ('name = "bad"\nprompt = "say hi"\ncheck = "true"\n[files]\n"a.txt" = "a"\n', ("`check`", "argv")),
    ('name = "bad"\nprompt = "say hi\ncheck = ["true"]\n', ("not valid TOML",)),
    ('name = "bad"\ncheck = ["true"]\n[files]\n"a.txt" = "a"\n', ("`prompt`", "neither")),
    ('name = "bad"\nprompt = "say hi"\ncheck = ["true"]\n[files]\n"a.txt" = "a"\n'
     '[[tickets]]\nid = "t"\ntitle = "t"\nprompt = "say hi"\n', ("`prompt`", "both")),
    ('name = "bad"\nprompt = "say hi"\ncheck = ["true"]\n', ("`source`", "`[files]`")),
    ('name = "bad"\nprompt = "say hi"\ncheck = ["true"]\nsetup = "make"\n[files]\n"a.txt" = "a"\n', ("`setup`",)),
    ('name = "bad"\nprompt = "say hi"\ncheck = ["true"]\nchek = 1\n[files]\n"a.txt" = "a"\n', ("unknown key `chek`",)),
    ('name = "bad name"\nprompt = "say hi"\ncheck = ["true"]\n[files]\n"a.txt" = "a"\n', ("`name`",)),
    ('name = "bad"\nprompt = "say hi"\ncheck = ["true"]\n[files]\n"../a.txt" = "a"\n', ("leaves",)),
    ('name = "bad"\ncheck = ["true"]\n[files]\n"a.txt" = "a"\n[[tickets]]\nid = "t"\ntitle = "t"\n'
     'prompt = "say hi"\nrepo = "../x"\n', ("ticket #1 sets `repo`",)),
    ('name = "bad"\nprompt = "say hi"\ncheck = ["true"]\nconfig = "[lanes]\\nmax_parallel = 2"\n[files]\n"a" = "a"\n',
     ("`config` sets [lanes]",)),
])
def test_a_malformed_task_file_is_one_line(repo: Path, tmp_path: Path, text: str, words: tuple[str, ...]) -> None:
    task = tmp_path / "bad.toml"
    task.write_text(text)
    _one_line(cli(repo, "scorecard", "prepare", str(task)), str(task), *words)


def test_unknown_tasks_lanes_and_baselines_are_one_line(repo: Path) -> None:
    _one_line(cli(repo, "scorecard", "prepare", "nosuch"), "no scorecard task 'nosuch'", "add-function")
    _one_line(cli(repo, "scorecard", "prepare", "./nosuch.toml"), "no scorecard task './nosuch.toml'")
    _one_line(cli(repo, "scorecard", "record", "nosuch-a1"), "no lane or plan 'nosuch-a1' to score")
    _one_line(cli(repo, "scorecard", "record", "x-a1", "--label", "bad label"), "label 'bad label'")
    _one_line(cli(repo, "scorecard", "compare", "before"), "no baseline 'before'", "scorecard baseline before")
    _one_line(cli(repo, "scorecard", "baseline", "before"), "no records labelled 'before'")
    _one_line(cli(repo, "scorecard", "prepare", "fix-test", "--prompt", ""), "the prompt is empty")


def test_recording_an_unfinished_lane_is_refused(repo: Path, tmp_path: Path) -> None:
    started = json.loads(cli(repo, "scorecard", "prepare", "doc-line", "--work-dir", str(tmp_path / "work"),
                             "--prompt", "say working\nsleep 60", "--json", check=True).stdout)
    task_repo, lane = Path(started["repo"]), started["lane"]
    try:
        assert cli(task_repo, "wait", lane, "--until", "running", "--timeout", "90").returncode == 0
        _one_line(cli(repo, "scorecard", "record", lane), f"{lane} has not finished", "wait")
        assert not (repo / ".lanes" / "state" / "scorecard" / "records.jsonl").exists()
    finally:
        cli(task_repo, "stop", lane, check=True)
    assert cli(task_repo, "wait", lane, "--timeout", "90").returncode == 0
    entry = json.loads(cli(repo, "scorecard", "record", lane, "--json", check=True).stdout)
    assert not entry["finished"] and not entry["passed"]


@pytest.mark.parametrize("argv", [("tasks",), ("prepare", "fix-test"), ("record", "fix-test-r1-a1"),
                                  ("baseline", "b"), ("compare", "b", "--json")])
def test_every_scorecard_command_is_refused_inside_a_lane(repo: Path, argv: tuple[str, ...]) -> None:
    refused = cli(repo, "scorecard", *argv, env={**os.environ, "LANES_LANE": "some-lane-a1"})
    assert refused.returncode == 2 and "lead's command" in refused.stderr and "LANES_LANE" in refused.stderr
    assert not (repo / ".lanes").exists()  # refused before anything was made
