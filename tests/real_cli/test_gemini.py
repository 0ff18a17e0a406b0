"""Gemini CLI (versions.py) as a lane through lanes-tui, against the scripted model server's Gemini dialect.

The preset runs as shipped (`gemini -p … --output-format stream-json -m {model} --skip-trust
--approval-mode yolo`, confined by Landlock); the lead's side is the lanes-tui command line. What the
lead configures is what a test's HOME holds: `~/.gemini/settings.json` with the auth type (with a base
URL alone gemini picks `gateway` and refuses it headless, exit 41), telemetry off, and gemini's own
retries cut to two attempts (`general.maxAttempts`) so an error mode costs one back-off (~5 s), not ten.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli, output, run_lane, status, wait_for, wait_state, write_config
from tests.real_cli.backoff import LIVE, cut_back_offs
from tests.real_cli.conftest import require_cli
from tests.real_cli.model_server.gemini import ROUTES
from tests.real_cli.model_server.script import Fail, RunCommand, Say, Script, WriteFile
from tests.real_cli.model_server.server import ModelServer

#: What the lead puts in ~/.gemini/settings.json for a gateway or a local server (docs/providers.md).
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"maxAttempts": 2, "enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}
#: The agent's work: a file, a command that proves the shell ran, a summary.
WORK = Script(steps=(WriteFile("hello.txt", "hello from gemini\n"), RunCommand("echo ran > ran.txt"),
                     Say("Wrote hello.txt and ran the command.")))
#: Gemini starts in ~2 s and answers each scripted step in well under one; a whole lane (worktree, agent,
#: gates) takes ~10 s on an idle machine. The deadlines give a loaded CI machine ten times that.
LANE_S = 120.0
#: The hang test's idle limit: far above gemini's quiet start-up (~3 s with no output), far below LANE_S.
HANG_IDLE_S = 8.0
GATE = 'commands = ["{python} -c \\"import os, sys; sys.exit(not os.path.exists(\'hello.txt\'))\\""]'


@pytest.fixture
def gemini(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    """The model server, and the environment lanes-tui (and so each lane) runs gemini in."""
    exe = require_cli("gemini")
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    with ModelServer(WORK) as server:
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
        monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-secret")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        try:
            yield server
        finally:
            cli(repo, "stop", "--all")


def lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane


def main_requests(server: ModelServer) -> list[Any]:
    return server.main_requests(":streamGenerateContent")


#: The task: gemini's answers are scripted whatever it says; the sim (the fallback) reads it as its script
#: and writes a file, so a fallback that worked is not NO-CHANGES.
TASK = "write from-sim.txt the sim took over"


def run_gemini(repo: Path, lane_id: str, *, chain: str = '["gemini"]', gates: str = "commands = []",
               idle_timeout_s: float = 60, extra: str = "") -> str:
    write_config(repo, chains=f"backend = {chain}", gates=gates, idle_timeout_s=idle_timeout_s,
                 timeout_s=LANE_S * 2, extra=extra, lanes_extra="protected_branches = []")
    return run_lane(repo, TASK, lane_id=lane_id)


def test_a_gemini_lane_writes_runs_meters_gates_and_accepts(repo: Path, gemini: ModelServer) -> None:
    lane = run_gemini(repo, "gem", gates=GATE)
    wait_for(lambda: '"type":"tool_use"' in output(repo, lane), timeout=LANE_S)
    peek = cli(repo, "peek", lane, "--lines", "200", check=True).stdout
    assert "write_file" in peek  # progress is visible while (or after) it runs
    wait_state(repo, lane, timeout=LANE_S)
    row = status(repo, lane)
    assert (row["state"], row["result"]) == ("ready", "OK"), row
    worktree = Path(row["worktree"])
    assert (worktree / "hello.txt").read_text() == "hello from gemini\n"
    assert (worktree / "ran.txt").read_text().strip() == "ran"  # its shell ran (yolo), inside the fence
    # Three main turns of 1200 in / 80 out each, as `result.stats` sums them; gemini-2.5-pro's price.
    assert row["tokens"]["input"] == 3 * 1200 and row["tokens"]["output"] == 3 * 80
    assert row["cost_usd"] > 0 and row["cost_estimated"] is True
    assert row["session_id"]
    packet = json.loads((lane_dir(repo, lane) / "packet.json").read_text())
    assert [g["status"] for g in packet["gates"]] == ["passed"], packet["gates"]
    bodies = [r.body for r in main_requests(gemini)]
    assert [sum("functionResponse" in p for c in b["contents"] for p in c["parts"]) for b in bodies] == [0, 1, 2]
    assert all(r.headers.get("x-goog-api-key") == "test-key-not-secret" for r in main_requests(gemini))
    unrouted = [f"{r.method} {r.path}" for r in gemini.requests if not any(
        route.method == r.method and route.path.fullmatch(r.path.split("?", 1)[0]) for route in ROUTES.routes)]
    assert unrouted == []  # a new call of a new gemini would have got a 404: the dialect must learn it
    # Accept merges exactly the agent's files.
    accepted = cli(repo, "accept", lane)
    assert accepted.returncode == 0, accepted.stderr
    merged = cli(repo, "status", lane, "--json", check=True)
    assert json.loads(merged.stdout)[0]["state"] == "accepted"
    shown = os.popen(f"git -C {repo} show --name-only --format= main").read().split()
    assert sorted(shown) == ["hello.txt", "ran.txt"]


def test_recover_relaunch_starts_gemini_fresh_in_the_new_worktree(repo: Path, gemini: ModelServer) -> None:
    failing = "commands = ['{python} -c \"raise SystemExit(1)\"']"
    lane = run_gemini(repo, "gemrelaunch", gates=failing)
    wait_state(repo, lane, timeout=LANE_S)
    first = status(repo, lane)
    assert first["state"] == "rejected" and first["session_id"], first
    before = len(main_requests(gemini))
    relaunched = cli(repo, "recover", lane, "--relaunch")
    assert relaunched.returncode == 0, relaunched.stderr
    new = relaunched.stdout.strip().splitlines()[-1]
    wait_state(repo, new, timeout=LANE_S)
    # gemini keeps sessions per project folder (`across_worktrees=False`): the relaunch starts fresh,
    # says so, and gets the whole task with the findings; no `--resume` in its argv.
    said = [json.loads(line) for line in (lane_dir(repo, new) / "events.jsonl").read_text().splitlines()]
    resume = [e for e in said if e.get("type") == "resume"]
    assert resume and all(not e.get("resumed") for e in resume), resume
    assert "keeps sessions per folder" in resume[0]["message"], resume
    fresh = main_requests(gemini)[before]
    assert sum("functionResponse" in p for c in fresh.body["contents"] for p in c["parts"]) == 0
    assert "Findings from attempt" in json.dumps(fresh.body["contents"])
    assert status(repo, new)["session_id"] != first["session_id"]


@pytest.mark.parametrize(("kind", "result"), [
    ("auth", "CONFIG-ERROR"),
    ("forbidden", "CONFIG-ERROR"),
])
def test_refused_credentials_are_config_errors_and_stop_the_chain(repo: Path, gemini: ModelServer, kind: str,
                                                                  result: str) -> None:
    gemini.set_script(Script(fail=Fail(kind)))
    lane = run_gemini(repo, f"gem{kind.replace('_', '')}", chain='["gemini", "sim"]')
    wait_state(repo, lane, timeout=LANE_S)
    row = status(repo, lane)
    assert row["result"] == result, row
    assert [t["provider"] for t in row["providers_tried"]] == ["gemini"]  # the chain stops


def test_an_untrusted_folder_is_a_config_error(repo: Path, gemini: ModelServer) -> None:
    """The lead's own argv without `--skip-trust`: gemini exits 55 before any request."""
    argv = '["gemini", "-p", "{prompt}", "--output-format", "stream-json", "-m", "{model}", "--approval-mode", "yolo"]'
    lane = run_gemini(repo, "gemtrust", chain='["gemini", "sim"]', extra=f"[providers.gemini]\nargv = {argv}\n")
    wait_state(repo, lane, timeout=LANE_S)
    row = status(repo, lane)
    assert row["result"] == "CONFIG-ERROR" and "trusted directory" in row["state_reason"], row
    assert [t["provider"] for t in row["providers_tried"]] == ["gemini"]
    assert main_requests(gemini) == []


def test_no_auth_type_for_a_base_url_is_a_config_error_and_doctor_names_the_fix(
        repo: Path, gemini: ModelServer, tmp_path: Path) -> None:
    (tmp_path / "home" / ".gemini" / "settings.json").write_text("{}")
    write_config(repo, chains='backend = ["gemini"]')
    report = json.loads(cli(repo, "doctor", "--json").stdout)
    assert any("selectedType" in p and "exit 41" in p for p in report["problems"]), report["problems"]
    lane = run_lane(repo, "Write hello.txt.", lane_id="gemauth41")
    wait_state(repo, lane, timeout=LANE_S)
    row = status(repo, lane)
    assert row["result"] == "CONFIG-ERROR" and "auth method" in row["state_reason"].lower(), row


def test_billing_is_out_of_budget_and_the_chain_moves_to_the_next_provider(repo: Path, gemini: ModelServer) -> None:
    gemini.set_script(Script(fail=Fail("billing")))
    lane = run_gemini(repo, "gembilling", chain='["gemini", "sim"]')
    wait_state(repo, lane, timeout=LANE_S)
    row = status(repo, lane)
    assert [(t["provider"], t["result"]) for t in row["providers_tried"]] == [
        ("gemini", "OUT-OF-BUDGET"), ("sim", "OK")], row


def test_a_daily_quota_with_a_reset_parks_the_lane_until_then(repo: Path, gemini: ModelServer) -> None:
    gemini.set_script(Script(fail=Fail("usage_limit", reset_s=3600)))
    lane = run_gemini(repo, "gemquota")
    row = wait_for(lambda: (r := status(repo, lane))["state"] == "waiting" and r, timeout=LANE_S)
    assert row["state_reason"].startswith("parked until") and "usage limit of gemini" in row["state_reason"], row
    [tried] = row["providers_tried"]
    assert (tried["result"], tried.get("error")) == ("OUT-OF-BUDGET", "usage_limit"), tried
    events = [json.loads(line) for line in (lane_dir(repo, lane) / "events.jsonl").read_text().splitlines()]
    until = [e["parked_until"] for e in events if e.get("parked_until")][-1]
    assert 3500 < until - time.time() <= 3600
    assert cli(repo, "abandon", lane).returncode == 0


def test_a_rate_limit_gemini_retries_by_itself_ends_ok(repo: Path, gemini: ModelServer) -> None:
    gemini.set_script(Script(steps=WORK.steps, fail=Fail("rate_limit", times=1)))
    lane = run_gemini(repo, "gemretry")
    wait_state(repo, lane, timeout=LANE_S)
    row = status(repo, lane)
    assert (row["state"], row["result"]) == ("ready", "OK"), row
    assert "Retrying after" in output(repo, lane)  # gemini's own retry line, which the channel reads
    assert len(main_requests(gemini)) == 4  # the refused first turn, then the three turns


#: The lane's own back-off after a run that ended rate limited (`supervisor.retry`), as its why says it.
BACKING_OFF = "retrying in"


@pytest.mark.parametrize(("kind", "words"), [("rate_limit", "rate limit"), ("overloaded", "overload"),
                                             ("server", "")])
def test_a_persistent_transient_error_is_retried_by_gemini_then_in_the_lane(repo: Path, gemini: ModelServer,
                                                                           kind: str, words: str) -> None:
    """Gemini retries (`general.maxAttempts`), gives up (exit 173 / 247 / 244); the lane backs off to
    retry it (`supervisor.retry`): the run is LANE-FAILED with a retry, the lane waits, never ready."""
    gemini.set_script(Script(fail=Fail(kind)))
    lane = run_gemini(repo, f"gem{kind.replace('_', '')}", chain='["gemini", "sim"]')
    row = wait_for(lambda: (r := status(repo, lane))["state"] == "waiting" and BACKING_OFF in r["state_reason"]
                   and r, timeout=LANE_S)
    assert len(main_requests(gemini)) == SETTINGS["general"]["maxAttempts"]  # type: ignore[index]
    assert "Retrying" in output(repo, lane)  # gemini's own retry line (the channel's `report_retry`)
    [first] = row["providers_tried"]
    assert (first["provider"], first["result"]) == ("gemini", "LANE-FAILED") and words in first["reason"], first
    assert cli(repo, "stop", lane).returncode == 0


def test_a_persistent_rate_limit_is_retried_in_the_lane_then_the_chain_moves_on(
        repo: Path, gemini: ModelServer, tmp_path: Path) -> None:
    # One attempt per gemini run (no back-off of its own): the lane's retries are what is tested.
    (tmp_path / "home" / ".gemini" / "settings.json").write_text(json.dumps(
        {**SETTINGS, "general": {**SETTINGS["general"], "maxAttempts": 1}}))  # type: ignore[dict-item]
    gemini.set_script(Script(fail=Fail("rate_limit")))
    lane = run_gemini(repo, "gemfallback", chain='["gemini", "sim"]')
    cuts = cut_back_offs(repo, lane, fallback=None, timeout=LANE_S)  # each with `recover`, as a lead would
    row = wait_for(lambda: (r := status(repo, lane))["state"] not in LIVE and r, timeout=LANE_S)
    tried = [(t["provider"], t["result"]) for t in row["providers_tried"]]
    assert tried[-1] == ("sim", "OK") and all(t == ("gemini", "LANE-FAILED") for t in tried[:-1]), tried
    assert cuts >= 1 and len(main_requests(gemini)) == cuts + 1


def test_a_model_that_never_answers_is_a_stall(repo: Path, gemini: ModelServer) -> None:
    gemini.set_script(Script(hang=True))
    lane = run_gemini(repo, "gemhang", idle_timeout_s=HANG_IDLE_S)
    wait_state(repo, lane, timeout=LANE_S)
    row = status(repo, lane)
    assert row["result"] == "LANE-STALLED", row
    assert len(main_requests(gemini)) == 1
