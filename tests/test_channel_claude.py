"""The claude-stream-json channel end to end: a real fake claude under a real detached supervisor.

The lead answers with the real `lanes-tui answer`; what the agent received is checked in the file the
fake writes, so every assertion is about bytes that crossed a real pipe.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.fakes import CLAUDE_REQUEST_ID, CLAUDE_SESSION, CLAUDE_TABLE
from tests.helpers import cli, output, run_lane, status, wait_for, wait_state, write_config


def _setup(repo: Path, **kwargs: Any) -> None:
    write_config(repo, chains='backend = ["fakeclaude"]', extra=CLAUDE_TABLE, **kwargs)


def _questions(repo: Path, lane: str) -> list[dict[str, Any]]:
    proc = cli(repo, "inbox", "--json", check=True)
    return [q for q in json.loads(proc.stdout) if q["lane"] == lane]


def _question(repo: Path, lane: str) -> dict[str, Any]:
    found = wait_for(lambda: _questions(repo, lane))
    assert len(found) == 1, found
    return found[0]


def _received(repo: Path, lane: str) -> list[dict[str, Any]]:
    path = Path(status(repo, lane)["worktree"]) / "fake_claude_received.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _seconds_waiting(repo: Path, lane: str) -> float:
    events = [json.loads(x) for x in (repo / ".lanes/state/lanes" / lane / "events.jsonl").read_text().splitlines()]
    waiting = [e["t"] for e in events if e.get("state") == "waiting"]
    return time.time() - waiting[-1] if waiting else 0.0


def test_denied_permission_reaches_claude_and_meters_are_reported(repo: Path) -> None:
    _setup(repo, idle_timeout_s=1.0, sample_s=0.2)
    lane = run_lane(repo, "permission", lane_id="claude-deny")
    question = _question(repo, lane)
    assert question["source"] == "claude-stdio"
    assert question["kind"] == "permission"
    assert question["state"] == "open"
    assert question["title"] == "Allow Bash: rm -rf build"
    assert json.loads(question["body"])["command"] == "rm -rf build"
    assert question["correlation"]["request_id"] == CLAUDE_REQUEST_ID
    wait_state(repo, lane, "waiting", timeout=10)
    # Live usage: msg_01 was printed twice as it grew; the second replaced the first.
    live = wait_for(lambda: (status(repo, lane)["tokens"] or {}).get("output") == 50 and status(repo, lane))
    assert live["tokens"] == {"total": 180, "input": 130, "cached_input": 100, "cache_write": 20, "output": 50}
    assert live["session_id"] == CLAUDE_SESSION
    # Far past the idle timeout while the question is open: waiting, never stalled.
    wait_for(lambda: _seconds_waiting(repo, lane) > 2.0, timeout=20)
    assert status(repo, lane)["state"] == "waiting"
    assert cli(repo, "answer", question["id"], "no").returncode == 0
    wait_state(repo, lane)
    row = status(repo, lane)
    assert (row["state"], row["result"]) == ("ready", "OK"), row
    received = _received(repo, lane)
    assert received == [{"type": "control_response", "response": {
        "subtype": "success", "request_id": CLAUDE_REQUEST_ID,
        "response": {"behavior": "deny", "message": "The lead denied this."}}}]
    assert "permission denied: The lead denied this." in output(repo, lane)
    assert _questions(repo, lane)[0]["state"] == "delivered"
    # The result line's totals and reported cost replace the live figures.
    assert row["tokens"] == {"total": 396, "input": 337, "cached_input": 300, "cache_write": 20, "output": 59}
    assert row["cost_usd"] == 0.0123 and row["cost_estimated"] is False
    assert row["session_id"] == CLAUDE_SESSION
    assert row["providers_tried"][0]["session_id"] == CLAUDE_SESSION
    meters = json.loads((repo / ".lanes/state/lanes" / lane / "meters.json").read_text())
    assert meters["usd_source"] == "reported"


def test_allowed_permission_sends_the_input_back(repo: Path) -> None:
    _setup(repo)
    lane = run_lane(repo, "permission", lane_id="claude-allow")
    question = _question(repo, lane)
    assert cli(repo, "answer", question["id"], "yes").returncode == 0
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "OK"
    response = _received(repo, lane)[0]["response"]
    assert response["request_id"] == CLAUDE_REQUEST_ID
    assert response["response"] == {"behavior": "allow",
                                    "updatedInput": {"command": "rm -rf build",
                                                     "description": "Remove the build folder"}}
    assert "permission allowed" in output(repo, lane)


def test_cancel_request_cancels_the_question_and_nothing_is_written(repo: Path) -> None:
    _setup(repo)
    lane = run_lane(repo, "cancel", lane_id="claude-cancel")
    question = _question(repo, lane)
    wait_for(lambda: _questions(repo, lane)[0]["state"] == "cancelled")
    refused = cli(repo, "answer", question["id"], "yes")
    assert refused.returncode != 0 and "cancelled" in refused.stderr
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "OK"
    assert _received(repo, lane) == []
    assert "nothing arrived after the cancel" in output(repo, lane)


def test_ask_user_question_answers_go_in_updated_input(repo: Path) -> None:
    _setup(repo)
    lane = run_lane(repo, "ask", lane_id="claude-ask")
    question = _question(repo, lane)
    assert (question["kind"], question["title"]) == ("choice", "Which database?")
    assert [o["label"] for o in question["options"]] == ["postgres", "sqlite"]
    assert cli(repo, "answer", question["id"], "sqlite").returncode == 0
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "OK"
    response = _received(repo, lane)[0]["response"]["response"]
    assert response["behavior"] == "allow"
    assert response["updatedInput"]["answers"] == {"Which database?": "sqlite"}
    assert 'answers: {\\"Which database?\\": \\"sqlite\\"}' in output(repo, lane)  # JSON-escaped
