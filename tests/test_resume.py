"""Resuming the provider's own session in a relaunched lane (docs/lanes.md, "Resuming a session").

Real supervisors run a real fake claude (it records each run's argv in its worktree and answers a
`--resume` of its own session), the sim (which cannot resume) and a tiny stand-in for aider (whose
session is its chat history file); the lead's side is the real `lanes-tui` command line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.config.cli_facts import ResumeFact, resume_fact
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.decisions.recover import resume_fields
from lanes_tui.engine.state.model import LaneRecord, ProviderAttempt
from lanes_tui.engine.supervisor.resume import resume_message
from tests.fakes import CLAUDE_SESSION, CLAUDE_TABLE
from tests.helpers import cli, output, run_lane, status, wait_for, wait_state, write_config

FAILING_GATE = "commands = ['{python} -c \"raise SystemExit(1)\"']"


def _lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane


def _record(repo: Path, lane: str) -> dict[str, Any]:
    return dict(json.loads((_lane_dir(repo, lane) / "lane.json").read_text()))


def _events(repo: Path, lane: str, kind: str) -> list[dict[str, Any]]:
    lines = (_lane_dir(repo, lane) / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("type") == kind]


def _argvs(repo: Path, lane: str) -> list[list[str]]:
    path = Path(status(repo, lane)["worktree"]) / "fake_claude_argv.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _question(repo: Path, lane: str) -> dict[str, Any]:
    def open_one() -> dict[str, Any] | None:
        rows = json.loads(cli(repo, "inbox", "--json", check=True).stdout)
        return next((q for q in rows if q["lane"] == lane and q["state"] == "open"), None)
    found: dict[str, Any] = wait_for(open_one)
    return found


def _relaunched(proc: Any) -> str:
    assert proc.returncode == 0, proc.stderr
    return str(proc.stdout.strip().splitlines()[-1])


# --- with real processes ------------------------------------------------------------------------


def test_a_relaunch_after_an_answer_resumes_the_claude_session(repo: Path) -> None:
    write_config(repo, chains='backend = ["fakeclaude"]', extra=CLAUDE_TABLE)
    try:
        lane = run_lane(repo, "permission", lane_id="resume")
        question = _question(repo, lane)
        wait_state(repo, lane, "waiting")
        assert cli(repo, "stop", lane).returncode == 0  # the agent is gone before the answer: orphaned
        assert status(repo, lane)["session_id"] == CLAUDE_SESSION
        new = _relaunched(cli(repo, "answer", question["id"], "yes", "--relaunch"))
        assert new == "resume-a2"
        record = _record(repo, new)
        assert (record["resume_from"], record["resume_provider"], record["resume_session"]) == (
            lane, "fakeclaude", CLAUDE_SESSION)
        wait_state(repo, new)
        assert (status(repo, new)["state"], status(repo, new)["result"]) == ("ready", "OK")
        argv = _argvs(repo, new)
        assert len(argv) == 1 and argv[0][argv[0].index("--resume") + 1] == CLAUDE_SESSION
        said = _events(repo, new, "resume")
        assert [(e["resumed"], e["message"]) for e in said] == [(True, f"resumed session {CLAUDE_SESSION}")]
        log = output(repo, new)
        assert f"starting, resumed session {CLAUDE_SESSION} ===" in log
        # The agent got the new message, not the task again: its last line is the lead's answer.
        assert f"resumed {CLAUDE_SESSION}: > The lead answered: 'Allow Bash: rm -rf build' \\u2192 yes" in log
    finally:
        cli(repo, "stop", "--all")


def test_recover_relaunch_fresh_starts_a_new_session(repo: Path) -> None:
    write_config(repo, chains='backend = ["fakeclaude"]', extra=CLAUDE_TABLE, gates=FAILING_GATE)
    try:
        lane = run_lane(repo, "permission", lane_id="fresh")
        assert cli(repo, "answer", _question(repo, lane)["id"], "yes").returncode == 0
        wait_state(repo, lane)
        assert status(repo, lane)["state"] == "rejected"
        assert cli(repo, "recover", lane, "--fresh").returncode == 2  # --fresh only with --relaunch
        new = _relaunched(cli(repo, "recover", lane, "--relaunch", "--fresh"))
        assert _record(repo, new)["resume_fresh"] is True
        assert cli(repo, "answer", _question(repo, new)["id"], "yes").returncode == 0  # a fresh run asks again
        wait_state(repo, new)
        assert all("--resume" not in argv for argv in _argvs(repo, new))
        said = _events(repo, new, "resume")
        assert [e["message"] for e in said] == [
            "session not resumed: the lead asked for a fresh session (--fresh); starting fresh"]
        assert "resumed session" not in output(repo, new)
    finally:
        cli(repo, "stop", "--all")


def test_a_session_the_cli_cannot_find_is_started_again_fresh(repo: Path) -> None:
    write_config(repo, chains='backend = ["fakeclaude"]', extra=CLAUDE_TABLE, gates=FAILING_GATE)
    try:
        lane = run_lane(repo, "permission", lane_id="gone")
        assert cli(repo, "answer", _question(repo, lane)["id"], "yes").returncode == 0
        wait_state(repo, lane)
        path = _lane_dir(repo, lane) / "lane.json"
        data = json.loads(path.read_text())
        data["providers_tried"][0]["session_id"] = "0000-gone-session"  # its transcript was deleted, say
        path.write_text(json.dumps(data))
        new = _relaunched(cli(repo, "recover", lane, "--relaunch"))
        assert cli(repo, "answer", _question(repo, new)["id"], "yes").returncode == 0  # the fresh run asks
        wait_state(repo, new)
        argvs = _argvs(repo, new)
        assert [("--resume" in a) for a in argvs] == [True, False]
        said = [(e["resumed"], e["message"]) for e in _events(repo, new, "resume")]
        assert said[0] == (True, "resumed session 0000-gone-session")
        assert said[1][0] is False and said[1][1].startswith(
            "session not resumed: fakeclaude could not find session 0000-gone-session (No conversation found")
        assert status(repo, new)["state"] == "rejected"  # the gate still fails: the fresh run ended OK
    finally:
        cli(repo, "stop", "--all")


def test_a_provider_without_resume_starts_fresh_and_says_so(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "say first attempt\nexit 1", lane_id="simresume")
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "LANE-FAILED"
    new = _relaunched(cli(repo, "recover", lane, "--relaunch"))
    wait_state(repo, new)
    said = _events(repo, new, "resume")
    assert [(e["resumed"], e["message"]) for e in said] == [
        (False, "session not resumed: sim cannot resume; starting fresh")]
    assert "resumed session" not in output(repo, new)
    assert "first attempt" in output(repo, new)  # the whole task again


FAKE_AIDER = """\
import json, pathlib, sys
pathlib.Path("aider_argv.jsonl").open("a").write(json.dumps(sys.argv[1:]) + "\\n")
history = pathlib.Path(".aider.chat.history.md")
with history.open("a") as handle:
    handle.write("#### " + sys.argv[-1].strip().splitlines()[-1] + "\\n")
print("aider: history has", len(history.read_text().splitlines()), "lines")
sys.exit(1)
"""


def test_aider_resumes_from_its_chat_history_file(repo: Path, tmp_path: Path) -> None:
    program = tmp_path / "bin" / "aider"
    program.parent.mkdir()
    program.write_text(f"#!{sys.executable}\n" + FAKE_AIDER)
    program.chmod(0o755)
    table = (f'[providers.aider]\nargv = ["{program}", "--yes-always", "--message", "{{prompt}}"]\n'
             'prompt = "arg"\nchannel = "plain"\n')
    write_config(repo, chains='backend = ["aider"]', extra=table)
    lane = run_lane(repo, "the task", lane_id="aid")
    wait_state(repo, lane)
    assert status(repo, lane)["session_id"] == ".aider.chat.history.md"
    new = _relaunched(cli(repo, "recover", lane, "--relaunch"))
    wait_state(repo, new)
    worktree = Path(status(repo, new)["worktree"])
    argv = json.loads((worktree / "aider_argv.jsonl").read_text().splitlines()[0])
    assert "--restore-chat-history" in argv
    history = (worktree / ".aider.chat.history.md").read_text().splitlines()
    assert history[0] == "#### the task" and len(history) == 2  # the old chat, then the new message
    assert "aider: history has 2 lines" in output(repo, new)
    assert [e["message"] for e in _events(repo, new, "resume")] == ["resumed session .aider.chat.history.md"]


# --- the pieces, without processes --------------------------------------------------------------


def test_resume_arguments_go_where_each_cli_takes_them() -> None:
    codex = resume_fact(PRESETS["codex"])
    assert codex is not None
    argv = PRESETS["codex"].render_argv("", Path("/w"))
    assert codex.apply(argv, "t-1")[-3:] == ["resume", "t-1", "-"]  # `codex exec … resume ID -`
    claude = resume_fact(PRESETS["claude"])
    assert claude is not None and claude.apply(["claude", "-p"], "s-1") == ["claude", "-p", "--resume", "s-1"]
    gemini = resume_fact(PRESETS["gemini"])
    assert gemini is not None and not gemini.across_worktrees  # sessions per folder: a new worktree starts fresh
    assert resume_fact(PRESETS["sim"]) is None
    aider = resume_fact(PRESETS["aider"])
    assert aider is not None and aider.history_file == ".aider.chat.history.md"
    assert ResumeFact(("--resume", "{session}"), before="-").apply(["x", "a"], "s") == ["x", "a", "--resume", "s"]


def _old(**kwargs: Any) -> LaneRecord:
    values: dict[str, Any] = {"id": "task-a1", "slug": "task", "attempt": 1, "task_type": "backend",
                              "prompt": "do it", "chain": ["claude", "codex"], "repo": "/r", "worktree": "/w",
                              "branch": "lane/task-a1", "base_sha": "0" * 40, "target_branch": "main"}
    return LaneRecord(**{**values, **kwargs})


def test_the_next_attempt_resumes_the_last_recorded_session() -> None:
    tried = [ProviderAttempt("claude", session_id="c-1"), ProviderAttempt("codex", session_id="x-2"),
             ProviderAttempt("claude")]
    assert resume_fields(_old(providers_tried=tried), fresh=False) == {
        "resume_from": "task-a1", "resume_provider": "codex", "resume_session": "x-2"}
    assert resume_fields(_old(providers_tried=[ProviderAttempt("sim")]), fresh=False)["resume_session"] is None
    assert resume_fields(_old(providers_tried=tried), fresh=True) == {"resume_from": "task-a1", "resume_fresh": True}


@pytest.mark.parametrize("raw", [False, True])
def test_the_resumed_agent_is_told_where_it_works_now(raw: bool) -> None:
    record = _old(id="task-a2", attempt=2, raw=raw, resume_from="task-a1",
                  prompt="do it\n\n## Findings from attempt 1\n> Attempt 1 ended rejected (gates failed).\n")
    message = resume_message(record, Path("/wt/task-a2"), Path("/wt/task-a1"))
    assert "do it" not in message  # the conversation has the task; the findings are what is new
    assert message.rstrip().endswith("> Attempt 1 ended rejected (gates failed).")
    if raw:
        assert message.startswith("## Findings from attempt 1")
    else:
        assert "a new worktree, /wt/task-a2, cut from main" in message
        assert "/wt/task-a1, is kept for reference" in message and "change nothing there" in message
