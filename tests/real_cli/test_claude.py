"""Claude Code (pinned in tests/real_cli/versions.py) as a lane through the real `lanes-tui`, end to end.

Each test scripts the model (tests/real_cli/model_server: Anthropic's Messages API, `anthropic.py`), runs
the shipped `claude` preset with `lanes-tui run`, and checks what the lead sees (`status`, `peek`,
`inbox`, `accept`, `recover`) and what crossed the wire (the server's recorded requests).

The errors are read from Claude's structured fields first (`channels.claude_errors`): a rate limit it
gives up on is retried in the lane after a back-off the test cuts short with `recover`, then the chain
falls back; Claude's own announced back-off (`api_retry`) is not a stall.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.helpers import cli, output, status, wait_for, write_config
from tests.real_cli.backoff import cut_back_offs
from tests.real_cli.claude_lane import (
    LANE_S,
    claude_env,
    events,
    lane_dir,
    main_requests,
    question,
    settled,
    start,
    stream,
    tool_results,
)
from tests.real_cli.conftest import require_cli
from tests.real_cli.model_server import anthropic
from tests.real_cli.model_server.script import Fail, RunCommand, Say, Script, Usage, WriteFile
from tests.real_cli.model_server.server import ModelServer

HELLO = WriteFile("hello.txt", "hello from claude\n")
#: A command Claude Code's acceptEdits mode does not allow by itself (it does allow `echo … > file`):
#: the permission request the lead must answer.
COMMAND = "python3 -c \"open('ran.txt', 'w').write('ran\\n')\""
SIM_FALLBACK = "write from-sim.txt the sim took over"


@pytest.fixture
def claude() -> Path:
    return require_cli("claude")


def _config(repo: Path, *, chain: str = '["claude"]', gates: str = "commands = []", **kwargs: Any) -> None:
    write_config(repo, chains=f"backend = {chain}", gates=gates, **kwargs)


def _result_line(repo: Path, lane: str) -> dict[str, Any]:
    return next(m for m in reversed(stream(repo, lane)) if m["type"] == "result")


def _api_errors(repo: Path, lane: str) -> list[tuple[str, str]]:
    """What the claude channel read from Claude's structured fields (its `api-error` events)."""
    return [(e["kind"], e["detail"]) for e in events(repo, lane, "api-error")]


def _retries(repo: Path, lane: str) -> list[dict[str, Any]]:
    return [m for m in stream(repo, lane) if m["type"] == "system" and m.get("subtype") == "api_retry"]


# --- a normal run ---------------------------------------------------------------------------------


def test_a_lane_writes_its_file_is_metered_gated_and_accepted(repo: Path, tmp_path: Path, claude: Path,
                                                              model_server: ModelServer) -> None:
    model_server.set_script(Script(steps=(HELLO, Say("wrote hello.txt")), usage=Usage(1200, 80, 1000)))
    _config(repo, gates="commands = ['test -f hello.txt']")
    git(repo, "checkout", "-q", "-b", "prog")  # main is protected: lanes are accepted into a programme branch
    env = claude_env(tmp_path, claude, model_server)
    lane = start(repo, env, "write")
    row = settled(repo, lane, env)
    assert (row["state"], row["result"], row["state_reason"]) == ("ready", "OK", "gates passed"), row
    # Metered from Claude's own result line: two turns of 200 fresh + 1000 cache-read input, 80 output.
    result = _result_line(repo, lane)
    assert row["tokens"] == {"total": 2560, "input": 2400, "cached_input": 2000, "cache_write": 0, "output": 160}
    assert row["cost_usd"] == pytest.approx(result["total_cost_usd"]) and row["cost_estimated"] is False
    meters = json.loads((lane_dir(repo, lane) / "meters.json").read_text())
    assert meters["usd_source"] == "reported"
    assert row["session_id"] == result["session_id"] == row["providers_tried"][0]["session_id"]
    # peek shows what the agent did.
    peek = cli(repo, "peek", lane, check=True).stdout
    assert "hello.txt" in peek and "wrote hello.txt" in peek
    # The gates ran on the agent's work, and accept merges exactly its file.
    assert "[gate] test: done" in output(repo, lane) + peek
    done = cli(repo, "accept", lane, timeout=LANE_S)
    assert done.returncode == 0, done.stderr
    changed = git(repo, "diff", "--name-only", row["base_sha"], "prog").split()
    assert changed == ["hello.txt"]
    assert (repo / "hello.txt").read_text() == "hello from claude\n"
    # What crossed the wire: the scripted turns, tools offered, the Write's result sent back.
    turns = main_requests(model_server)
    assert len(turns) == 2 and turns[0].headers["x-api-key"] == "sk-ant-lanes-tui-test-key"
    assert [r["tool_use_id"] for r in tool_results(turns[1])] == ["toolu_script_00"]


def _permission_lane(repo: Path, tmp_path: Path, claude: Path, server: ModelServer,
                     slug: str, **extra_env: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    server.set_script(Script(steps=(HELLO, RunCommand(COMMAND), Say("all done"))))
    _config(repo, gates="commands = ['test -f hello.txt']")
    env = {**claude_env(tmp_path, claude, server), **extra_env}
    lane = start(repo, env, slug)
    asked = question(repo, lane)
    assert (asked["source"], asked["kind"]) == ("claude-stdio", "permission")
    assert asked["title"] == f"Allow Bash: {COMMAND}"
    assert json.loads(asked["body"].split("\n\n")[-1])["command"] == COMMAND
    # While it waits, peek shows the progress so far: the file written, the command it wants to run.
    peek = wait_for(lambda: (text := cli(repo, "peek", lane).stdout) and "ran.txt" in text and text, timeout=LANE_S)
    assert "hello.txt" in peek
    assert status(repo, lane)["state"] == "waiting"
    return lane, asked, env


def test_a_bash_permission_answered_yes_runs_the_command(repo: Path, tmp_path: Path, claude: Path,
                                                         model_server: ModelServer) -> None:
    lane, asked, env = _permission_lane(repo, tmp_path, claude, model_server, "allow")
    assert cli(repo, "answer", asked["id"], "yes").returncode == 0
    row = settled(repo, lane, env)
    assert (row["state"], row["result"]) == ("ready", "OK"), row
    assert (Path(row["worktree"]) / "ran.txt").read_text() == "ran\n"
    last = main_requests(model_server)[-1]
    ran = [r for r in tool_results(last) if r["tool_use_id"] == "toolu_script_01"]
    assert len(ran) == 1 and not ran[0].get("is_error")


def test_a_bash_permission_answered_no_does_not_run_it(repo: Path, tmp_path: Path, claude: Path,
                                                       model_server: ModelServer) -> None:
    # With CLAUDE_CONFIG_DIR set, Claude keeps all its state there, not in HOME: the fence follows it.
    config_dir = tmp_path / "claude-config"
    lane, asked, env = _permission_lane(repo, tmp_path, claude, model_server, "deny",
                                        CLAUDE_CONFIG_DIR=str(config_dir))
    assert cli(repo, "answer", asked["id"], "no").returncode == 0
    row = settled(repo, lane, env)
    assert (row["state"], row["result"]) == ("ready", "OK"), row
    assert not (Path(row["worktree"]) / "ran.txt").exists()
    assert (Path(row["worktree"]) / "hello.txt").exists()
    last = main_requests(model_server)[-1]
    denied = [r for r in tool_results(last) if r["tool_use_id"] == "toolu_script_01"]
    assert len(denied) == 1 and denied[0]["is_error"] is True
    assert "The lead denied this." in json.dumps(denied[0])
    assert _result_line(repo, lane)["permission_denials"][0]["tool_name"] == "Bash"
    assert list(config_dir.glob(f"projects/*/{row['session_id']}.jsonl"))
    assert not list((tmp_path / "claude-home").glob(".claude/projects/*"))  # (the fence made ~/.claude/ empty)
    record = json.loads((lane_dir(repo, lane) / "lane.json").read_text())
    assert record["confinement"]["mechanism"].startswith("landlock"), record["confinement"]
    assert str(config_dir) in record["confinement"]["writable"]


# --- resuming Claude's own session ----------------------------------------------------------------


def test_recover_relaunch_resumes_claudes_own_session(repo: Path, tmp_path: Path, claude: Path,
                                                      model_server: ModelServer) -> None:
    model_server.set_script(Script(steps=(HELLO, Say("wrote hello.txt"))))
    _config(repo, gates="commands = ['test -f second.txt']")  # fails the first attempt: rejected
    env = claude_env(tmp_path, claude, model_server)
    lane = start(repo, env, "resume")
    first = settled(repo, lane, env)
    assert first["state"] == "rejected", first
    session = first["session_id"]
    seen_before = len(model_server.requests)
    # The resumed conversation holds one tool result: its next step writes second.txt.
    model_server.set_script(Script(steps=(HELLO, WriteFile("second.txt", "again\n"), Say("wrote second.txt"))))
    proc = cli(repo, "recover", lane, "--relaunch", env=env, timeout=LANE_S)
    assert proc.returncode == 0, proc.stderr
    new = proc.stdout.strip().splitlines()[-1]
    row = settled(repo, new, env)
    assert (row["state"], row["result"]) == ("ready", "OK"), (row, output(repo, new))
    said = [(e["resumed"], e["message"]) for e in events(repo, new, "resume")]
    assert said[0] == (True, f"resumed session {session}"), said
    assert f"resumed session {session}" in output(repo, new)
    assert row["session_id"] == session  # Claude continues the same session, it does not fork one
    # Claude sent the earlier conversation back: the first prompt's Write and its result, then the new message.
    resumed = [r for r in main_requests(model_server)[0:] if model_server.requests.index(r) >= seen_before]
    assert resumed, "the relaunched claude never called the model"
    history = json.dumps(resumed[0].body["messages"])
    assert "toolu_script_00" in history and "Do the scripted task." in history
    assert [r["tool_use_id"] for r in tool_results(resumed[0])][:1] == ["toolu_script_00"]
    assert (Path(row["worktree"]) / "second.txt").read_text() == "again\n"


# --- the API's errors -----------------------------------------------------------------------------


def test_billing_is_out_of_budget_and_the_chain_moves_to_the_fallback(repo: Path, tmp_path: Path, claude: Path,
                                                                      model_server: ModelServer) -> None:
    model_server.set_script(Script(fail=Fail("billing")))
    _config(repo, chain='["claude", "sim"]')
    env = claude_env(tmp_path, claude, model_server)
    lane = start(repo, env, "billing", prompt=SIM_FALLBACK)
    row = settled(repo, lane, env)
    tried = row["providers_tried"]
    assert [(t["provider"], t["result"]) for t in tried] == [("claude", "OUT-OF-BUDGET"), ("sim", "OK")], tried
    assert (row["state"], row["result"]) == ("ready", "OK")
    assert (Path(row["worktree"]) / "from-sim.txt").exists()
    said = [m for m in stream(repo, lane) if m.get("error")]
    assert said and said[0]["error"] == "billing_error" and said[0]["api_error_status"] == 400
    assert _api_errors(repo, lane) == [("billing", "Credit balance is too low")]


@pytest.mark.parametrize(("kind", "status_code", "words"), [
    ("auth", 401, "Invalid API key"),
    ("forbidden", 403, "API Error: 403"),
])
def test_refused_credentials_are_a_config_error_and_stop_the_chain(repo: Path, tmp_path: Path, claude: Path,
                                                                   model_server: ModelServer, kind: str,
                                                                   status_code: int, words: str) -> None:
    model_server.set_script(Script(fail=Fail(kind)))
    _config(repo, chain='["claude", "sim"]')
    env = claude_env(tmp_path, claude, model_server)
    lane = start(repo, env, kind, prompt=SIM_FALLBACK)
    row = settled(repo, lane, env)
    tried = row["providers_tried"]
    assert [(t["provider"], t["result"]) for t in tried] == [("claude", "CONFIG-ERROR")], tried
    assert row["result"] == "CONFIG-ERROR"
    assert _result_line(repo, lane)["api_error_status"] == status_code
    [(said, detail)] = _api_errors(repo, lane)
    assert said == kind and words in detail


@pytest.mark.parametrize(("kind", "status_code"), [("rate_limit", 429), ("overloaded", 529), ("server", 500)])
def test_claude_retries_a_passing_error_by_itself_and_the_lane_goes_on(repo: Path, tmp_path: Path, claude: Path,
                                                                       model_server: ModelServer, kind: str,
                                                                       status_code: int) -> None:
    model_server.set_script(Script(steps=(HELLO, Say("wrote hello.txt")), fail=Fail(kind, times=2)))
    _config(repo)
    env = claude_env(tmp_path, claude, model_server, retries=2)
    lane = start(repo, env, kind)
    row = settled(repo, lane, env)
    assert (row["state"], row["result"]) == ("ready", "OK"), (row, output(repo, lane))
    retries = _retries(repo, lane)
    assert [(r["attempt"], r["error_status"]) for r in retries] == [(1, status_code), (2, status_code)]
    assert len(events(repo, lane, "api-retry")) == 2 and _api_errors(repo, lane) == []
    assert (Path(row["worktree"]) / "hello.txt").exists()


def test_claudes_own_back_off_is_not_a_stall(repo: Path, tmp_path: Path, claude: Path, model_server: ModelServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Silence longer than the idle timeout while Claude waits out a retry-after it announced."""
    monkeypatch.setattr(anthropic, "RETRY_AFTER_S", 4)
    model_server.set_script(Script(steps=(HELLO, Say("wrote hello.txt")), fail=Fail("rate_limit", times=1)))
    _config(repo, idle_timeout_s=2.0, sample_s=0.2)
    env = claude_env(tmp_path, claude, model_server, retries=1)
    lane = start(repo, env, "backoff")
    row = settled(repo, lane, env)
    retries = _retries(repo, lane)
    assert retries and retries[0]["retry_delay_ms"] >= 3000  # longer than the idle timeout
    assert (row["state"], row["result"]) == ("ready", "OK"), row


def test_retries_run_out_then_the_lane_retries_then_falls_back(repo: Path, tmp_path: Path, claude: Path,
                                                               model_server: ModelServer) -> None:
    model_server.set_script(Script(fail=Fail("overloaded")))
    _config(repo, chain='["claude", "sim"]')
    env = claude_env(tmp_path, claude, model_server)
    lane = start(repo, env, "exhausted", prompt=SIM_FALLBACK)
    wait_for(lambda: _api_errors(repo, lane), timeout=LANE_S)
    assert _api_errors(repo, lane)[0][0] == "overloaded"  # Claude says server_error; the 529 says overloaded
    assert cut_back_offs(repo, lane, fallback="sim", timeout=LANE_S, env=env) >= 1
    row = settled(repo, lane, env)
    tried = row["providers_tried"]
    assert tried[-1]["provider"] == "sim" and row["result"] == "OK", tried
    assert all(t["result"] == "LANE-FAILED" and "overloaded" in t["reason"] for t in tried[:-1]), tried


def test_the_why_column_says_what_claude_said(repo: Path, tmp_path: Path, claude: Path,
                                              model_server: ModelServer) -> None:
    """The structured error's words, not 300 characters of the JSON line the text fallback matched."""
    model_server.set_script(Script(fail=Fail("auth")))
    _config(repo)
    env = claude_env(tmp_path, claude, model_server)
    lane = start(repo, env, "why")
    row = settled(repo, lane, env)
    assert row["result"] == "CONFIG-ERROR"
    reason = row["providers_tried"][0]["reason"]
    assert "Invalid API key" in reason and '{"type"' not in reason, reason


def test_a_plans_usage_limit_parks_the_lane_until_it_resets(repo: Path, tmp_path: Path, claude: Path,
                                                           model_server: ModelServer) -> None:
    model_server.set_script(Script(fail=Fail("usage_limit", reset_s=5400)))
    _config(repo)
    env = claude_env(tmp_path, claude, model_server, gateway=True)
    lane = start(repo, env, "usage")
    try:
        parked = wait_for(lambda: (row := status(repo, lane))["state_reason"] and "parked until" in
                          row["state_reason"] and row, timeout=LANE_S)
        tried = parked["providers_tried"]
        assert [(t["provider"], t["result"]) for t in tried] == [("claude", "OUT-OF-BUDGET")], tried
        said = next(m for m in stream(repo, lane) if m.get("api_error") == "usage_limit_reached")
        reset = said["api_error_params"]["rate_limit_info"]["resetsAt"]
        assert said["message"]["content"][0]["text"].startswith("You've hit your 5-hour limit · resets ")
        expected = datetime.fromtimestamp(reset).astimezone().strftime("%H:%M")
        assert expected in parked["state_reason"], (expected, parked["state_reason"])
        [usage] = events(repo, lane, "api-error")
        assert (usage["kind"], usage["reset_at"]) == ("usage_limit", reset)
    finally:
        cli(repo, "stop", lane)


def test_a_hang_is_a_stall(repo: Path, tmp_path: Path, claude: Path, model_server: ModelServer) -> None:
    model_server.set_script(Script(hang=True))
    _config(repo, idle_timeout_s=3.0, sample_s=0.2)
    env = claude_env(tmp_path, claude, model_server)
    lane = start(repo, env, "hang")
    row = settled(repo, lane, env)
    assert row["result"] == "LANE-STALLED", row
    assert main_requests(model_server), "claude never reached the server"
