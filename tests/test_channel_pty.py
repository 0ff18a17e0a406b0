"""The pty channel end to end: a fake interactive aider in a real pseudo-terminal.

Its ordinary output contains a numbered list and diff lines with `(y/n)` and `(Y)es/(N)o`; only the
real prompt at the bottom of the screen may become a question.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psutil

from tests.fakes import FAKE_AIDER, provider_table
from tests.helpers import cli, output, run_lane, status, wait_for, wait_state, write_config


def _setup(repo: Path, *args: str) -> None:
    # The aider preset stays `plain` for headless runs; `channel = "pty"` switches it to a terminal.
    table = provider_table("aider", FAKE_AIDER, *args, "--message", "{prompt}", channel="pty", prompt="arg")
    write_config(repo, chains='backend = ["aider"]', extra=table)


def _questions(repo: Path, lane: str) -> list[dict[str, Any]]:
    proc = cli(repo, "inbox", "--json", check=True)
    return [q for q in json.loads(proc.stdout) if q["lane"] == lane]


def _answer_file(repo: Path, lane: str) -> Path:
    return Path(status(repo, lane)["worktree"]) / "fake_aider_answer.txt"


def test_terminal_prompt_becomes_a_question_and_no_types_n_then_enter(repo: Path) -> None:
    _setup(repo)
    lane = run_lane(repo, "make calc safer", lane_id="aider-pty")
    question = wait_for(lambda: _questions(repo, lane))[0]
    assert question["source"] == "pty"
    assert question["kind"] == "yesno"
    assert question["title"] == "Apply edits to calc.py? (Y)es/(N)o [Yes]:"
    assert len(question["correlation"]["screen_fingerprint"]) == 64
    wait_state(repo, lane, "waiting", timeout=10)
    assert cli(repo, "answer", question["id"], "n").returncode == 0
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "OK", row
    # One key and Enter (the terminal turns the carriage return into a newline): exactly "n\n".
    assert _answer_file(repo, lane).read_text() == repr("n\n")
    assert "answered n" in output(repo, lane)
    assert "terminal 120x40" in output(repo, lane)
    questions = _questions(repo, lane)
    assert [q["state"] for q in questions] == ["delivered"], "the list and diff lines asked nothing"
    assert row["tokens"] == {"total": 12345, "input": 12000, "cached_input": 0, "cache_write": 0, "output": 345}
    assert row["cost_usd"] == 0.12 and row["cost_estimated"] is False


def test_prompt_that_vanishes_cancels_the_question_and_types_nothing(repo: Path) -> None:
    _setup(repo, "--vanish")
    lane = run_lane(repo, "make calc safer", lane_id="aider-gone")
    question = wait_for(lambda: _questions(repo, lane))[0]
    assert question["source"] == "pty"
    cancelled = wait_for(lambda: [q for q in _questions(repo, lane) if q["state"] == "cancelled"])[0]
    assert "vanished" in cancelled["reason"]
    refused = cli(repo, "answer", question["id"], "yes")
    assert refused.returncode != 0
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "OK"
    assert _answer_file(repo, lane).read_text() == ""
    assert "typed while gone: b''" in output(repo, lane)
    assert len(_questions(repo, lane)) == 1


def test_stopping_a_lane_at_its_prompt_orphans_the_question_and_ends_the_terminal(repo: Path) -> None:
    _setup(repo)
    lane = run_lane(repo, "make calc safer", lane_id="aider-stop")
    question = wait_for(lambda: _questions(repo, lane))[0]
    agent_pid = wait_for(lambda: status(repo, lane)["providers_tried"] and _agent_pid(repo, lane))
    supervisor = json.loads((repo / ".lanes/state/lanes" / lane / "supervisor.json").read_text())["pid"]
    os.kill(supervisor, signal.SIGTERM)
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "LANE-FAILED" and "stopped by the lead" in row["providers_tried"][0]["reason"]
    assert [q["state"] for q in _questions(repo, lane)] == ["orphaned"]
    assert cli(repo, "answer", question["id"], "yes").returncode == 0, "kept for the next attempt"
    assert not _answer_file(repo, lane).exists(), "nothing was typed into the dead terminal"
    wait_for(lambda: not psutil.pid_exists(agent_pid) or psutil.Process(agent_pid).status() == "zombie")


def _agent_pid(repo: Path, lane: str) -> int | None:
    pid = json.loads((repo / ".lanes/state/lanes" / lane / "lane.json").read_text())["agent_pid"]
    return pid if isinstance(pid, int) else None


def test_missing_terminal_agent_is_a_config_error(repo: Path) -> None:
    table = '[providers.ghostpty]\nargv = ["definitely-not-installed-agent"]\nchannel = "pty"\nprompt = "arg"\n'
    write_config(repo, chains='backend = ["ghostpty"]', extra=table)
    lane = run_lane(repo, "hello", lane_id="ghost-pty")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "CONFIG-ERROR"
    assert "definitely-not-installed-agent" in row["providers_tried"][0]["reason"]
