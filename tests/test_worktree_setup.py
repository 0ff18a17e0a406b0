"""`[lanes] copy` and `[lanes] setup`: worktrees ready to work in, on real repositories and real sim lanes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lanes_tui.engine.config.settings import parse_config
from lanes_tui.engine.core.errors import ConfigError
from tests.conftest import git
from tests.helpers import cli, output, run_lane, status, wait_state, write_config


def events(repo: Path, lane: str) -> list[dict[str, object]]:
    path = repo / ".lanes" / "state" / "lanes" / lane / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture()
def programme(repo: Path) -> Path:
    git(repo, "checkout", "-q", "-b", "programme")
    return repo


def test_copied_env_is_in_the_worktree_but_never_in_the_diff_or_the_commit(programme: Path) -> None:
    repo = programme
    (repo / ".env").write_text("SECRET=lead-only\n")  # untracked and not ignored in the lead checkout
    (repo / "config").mkdir()
    (repo / "config" / "local.toml").write_text("debug = true\n")
    write_config(repo, lanes_extra='copy = [".env", "config/local.toml", "missing.cfg"]')
    lane = run_lane(repo, "write work.txt the lane work\n", lane_id="cp")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["state"] == "ready", row
    worktree = Path(row["worktree"])
    assert (worktree / ".env").read_text() == "SECRET=lead-only\n"
    assert (worktree / "config" / "local.toml").read_text() == "debug = true\n"
    skipped = [e for e in events(repo, lane) if e["type"] == "copy-skipped"]
    assert [e["path"] for e in skipped] == ["missing.cfg"] and "does not exist" in str(skipped[0]["reason"])

    packet = json.loads((repo / ".lanes/state/lanes" / lane / "packet.json").read_text())
    assert packet["changed_files"] == ["work.txt"]
    diff = cli(repo, "diff", lane, "--stat", check=True).stdout
    assert "work.txt" in diff and ".env" not in diff and "local.toml" not in diff
    # Scoped to the lane's worktree: the lead's own untracked .env is still seen in the lead checkout.
    assert "?? .env" in git(repo, "status", "--porcelain", "--untracked-files=all")

    accepted = cli(repo, "accept", lane)
    assert accepted.returncode == 0, accepted.stderr
    files = git(repo, "show", "--name-only", "--format=", "programme").split()
    assert files == ["work.txt"]
    assert ".env" not in git(repo, "ls-tree", "-r", "--name-only", "programme").split()


def test_failing_setup_step_ends_the_lane_config_error_and_the_agent_never_runs(repo: Path) -> None:
    write_config(repo, lanes_extra="setup = ['{python} -c \"print(1)\"', "
                                   "'{python} -c \"raise SystemExit(\\\"no lockfile found\\\")\"']")
    lane = run_lane(repo, "write agent-was-here.txt yes\n", lane_id="badsetup")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "CONFIG-ERROR", row
    reason = str(row.get("reason") or row.get("state_reason") or row)
    assert "setup step `{python} -c \"raise SystemExit(\\\"no lockfile found\\\")\"` failed (exit 1)" in reason, row
    assert "no lockfile found" in reason
    assert not (Path(row["worktree"]) / "agent-was-here.txt").exists()
    log = output(repo, lane)
    assert "=== lanes-tui: setup: {python} -c \"print(1)\" ===" in log and "no lockfile found" in log
    assert "starting" not in log  # no provider header: the agent never started
    kinds = [e["type"] for e in events(repo, lane)]
    assert kinds.count("setup-start") == 2 and kinds.count("setup-done") == 2
    states = [(e["state"], e["reason"]) for e in events(repo, lane) if e["type"] == "state"]
    assert ("launching", 'setup: {python} -c "print(1)"') in states  # the lane says which step runs


def test_passing_setup_step_is_visible_to_the_agent(repo: Path) -> None:
    step = '{python} -c "open(\\"from-setup.txt\\", \\"w\\").write(\\"ready\\\\n\\")"'
    write_config(repo, lanes_extra=f"setup = ['{step}']")  # a TOML literal string: backslashes kept
    lane = run_lane(repo, "append from-setup.txt agent\n", lane_id="goodsetup")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["state"] == "ready", row
    assert (Path(row["worktree"]) / "from-setup.txt").read_text() == "ready\nagent\n"
    log = output(repo, lane)
    assert log.index("=== lanes-tui: setup:") < log.index("starting")


@pytest.mark.parametrize(("entry", "why"), [
    ("/etc/passwd", "absolute path"),
    ("../outside.env", "climbs out"),
    ("config/../../x", "climbs out"),
    (".git/config", "inside .git"),
])
def test_bad_copy_entries_are_config_errors_naming_key_and_line(repo: Path, entry: str, why: str) -> None:
    text = f'[lanes]\nmax_parallel = 2\ncopy = [".env", "{entry}"]\n'
    with pytest.raises(ConfigError, match=why) as info:
        parse_config(text, path=None, repo=repo)
    assert info.value.key == "lanes.copy" and info.value.line == 3


def test_setup_keys_parse_and_unsplittable_steps_are_refused(repo: Path) -> None:
    config = parse_config('[lanes]\nsetup = ["uv sync", "npm ci"]\nsetup_timeout_s = 30\ncopy = ["./.env"]\n',
                          path=None, repo=repo)
    assert config.lanes.setup == ("uv sync", "npm ci") and config.lanes.setup_timeout_s == 30
    assert config.lanes.copy == (".env",)
    assert parse_config("", path=None, repo=repo).lanes.setup_timeout_s == 600
    with pytest.raises(ConfigError, match="cannot be split") as info:
        parse_config('[lanes]\nsetup = ["echo \'unclosed"]\n', path=None, repo=repo)
    assert info.value.key == "lanes.setup" and info.value.line == 2


def test_a_setup_step_past_its_timeout_is_stopped_and_named(repo: Path) -> None:
    write_config(repo, lanes_extra="setup = ['{python} -c \"import time; time.sleep(120)\"']\nsetup_timeout_s = 1")
    lane = run_lane(repo, "write agent-was-here.txt yes\n", lane_id="slowsetup")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "CONFIG-ERROR" and "timed out after 1s" in str(row), row
    assert not (Path(row["worktree"]) / "agent-was-here.txt").exists()


def test_a_symlinked_source_is_copied_as_a_regular_file(repo: Path, tmp_path: Path) -> None:
    (repo / "local").mkdir()  # a link is followed inside the repository only (tests/test_hostile_paths.py)
    (repo / "local" / "secrets.env").write_text("TOKEN=x\n")
    (repo / ".env").symlink_to("local/secrets.env")
    write_config(repo, lanes_extra='copy = [".env"]')
    lane = run_lane(repo, "write w.txt w\n", lane_id="link")
    wait_state(repo, lane)
    copied = Path(status(repo, lane)["worktree"]) / ".env"
    assert not copied.is_symlink() and copied.read_text() == "TOKEN=x\n"
