"""CI after `finish --pr` (issue 30, item 8): `lanes-tui ci` and `finish --pr --watch` follow a PR's checks.

A fake `gh` (tests/fakes/fake_gh.py, a real executable first on PATH) answers from a scenario file,
one poll per `gh pr checks` call, so pending → pass / fail plays out over successive calls. The
follower waits on an injected FakeClock: no test sleeps, and the clock shows how long it "waited".
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.app.cli import ci as cli_ci
from lanes_tui.app.cli.main import main
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.decisions.pr_checks import PullRequest, follow_checks
from tests.conftest import git
from tests.helpers import cli, programme_with_origin, run_lane, wait_state

FAKE_GH = Path(__file__).parent / "fakes" / "fake_gh.py"
PR_URL = "https://github.com/o/r/pull/7"


def check(name: str, bucket: str, state: str, job: str = "", workflow: str = "CI") -> dict[str, str]:
    link = f"https://github.com/o/r/actions/runs/111/job/{job}" if job else "https://ci.example.invalid/build/5"
    return {"name": name, "workflow": workflow, "state": state, "bucket": bucket, "link": link, "description": "",
            "event": "pull_request", "startedAt": "2026-01-01T00:00:00Z", "completedAt": ""}


def pr_json(repo: Path, head: str = "programme") -> dict[str, Any]:
    return {"number": 7, "url": PR_URL, "headRefName": head, "baseRefName": "main",
            "headRefOid": git(repo, "rev-parse", head), "state": "OPEN"}


def install_gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: dict[str, Any]) -> Path:
    """The fake gh first on PATH; returns its folder (scenario.json, calls.jsonl)."""
    bin_dir = tmp_path / "gh-bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(f"#!{sys.executable}\n" + FAKE_GH.read_text())
    gh.chmod(0o755)
    state = tmp_path / "gh-state"
    state.mkdir()
    (state / "scenario.json").write_text(json.dumps(scenario))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GH_DIR", str(state))
    return state


def calls(state: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]


def run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], clock: FakeClock,
             *args: str) -> tuple[int, str, str]:
    """`lanes-tui ARGS` in this process, its follower waiting on `clock`."""
    monkeypatch.setattr(cli_ci, "make_clock", lambda: clock)
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture()
def programme(repo: Path, tmp_path: Path) -> Path:
    """`programme` checked out and pushed to a bare `origin` with its upstream; `main` is the PR's base."""
    return programme_with_origin(repo, tmp_path)


def test_all_checks_passing_exits_0_with_a_line_per_change(programme: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    repo = programme
    monkeypatch.setenv("GH_TOKEN", "the-leads-token")
    state = install_gh(tmp_path, monkeypatch, {"pr": pr_json(repo), "polls": [
        [check("test", "pending", "IN_PROGRESS"), check("lint", "pending", "QUEUED")],
        [check("test", "pending", "IN_PROGRESS"), check("lint", "pass", "SUCCESS")],
        [check("test", "pass", "SUCCESS"), check("lint", "pass", "SUCCESS"), check("docs", "skipping", "SKIPPED")],
    ]})
    clock = FakeClock()
    start = clock.monotonic()
    code, out, err = run_main(monkeypatch, capsys, clock, "--repo", str(repo), "ci", "--interval", "20")
    assert code == 0, (out, err)
    lines = out.splitlines()
    assert lines[0] == f"following the checks of PR #7 {PR_URL}: every 20s, at most 3600s"
    assert lines[1:] == ["00:00  pending   CI / test (IN_PROGRESS)", "00:00  pending   CI / lint (QUEUED)",
                         "00:20  pass      CI / lint (SUCCESS)",
                         "00:40  pass      CI / test (SUCCESS)", "00:40  skipping  CI / docs (SKIPPED)",
                         "CI passed on PR #7: 3 checks (1 skipped)"], out
    assert clock.monotonic() - start == 40  # two waits of --interval, no more
    made = calls(state)
    # No PR named: the programme branch's, then three polls; argv lists, the lead's token, gh's prompts off.
    assert made[0]["argv"][:3] == ["pr", "view", "programme"]
    assert [c["argv"][:2] for c in made[1:]] == [["pr", "checks"]] * 3
    assert made[1]["argv"] == ["pr", "checks", "7", "--json",
                               "bucket,completedAt,description,event,link,name,startedAt,state,workflow"]
    assert all(c["env"] == {"GH_TOKEN": "the-leads-token", "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1"} for c in made)
    assert all(c["pgid_is_pid"] for c in made)  # each gh in its own process group
    assert not (repo / ".lanes/state/ci").exists()  # nothing failed: no findings


def test_a_failed_check_exits_1_with_findings_and_the_recover_command(programme: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    repo = programme
    old = run_lane(repo, 'write notes.txt "already in main"', lane_id="old")
    wait_state(repo, old)
    cli(repo, "accept", old, check=True)
    git(repo, "branch", "-f", "main", "programme")  # the base has that lane's work: the PR does not carry it
    lane = run_lane(repo, 'write calc.py "def add(a, b): return a - b"', lane_id="adder")
    wait_state(repo, lane)
    cli(repo, "accept", lane, check=True)  # the lane's work is on programme now: the PR carries it
    log = "".join(f"test\tRun pytest\t2026-01-01T00:00:{i:02d}Z log line {i}\n" for i in range(200))
    state = install_gh(tmp_path, monkeypatch, {"pr": pr_json(repo), "logs": {"222": log}, "polls": [
        [check("test", "pending", "IN_PROGRESS", job="222"), check("lint", "pending", "QUEUED", job="333")],
        [check("test", "fail", "FAILURE", job="222"), check("lint", "pass", "SUCCESS", job="333"),
         check("deploy-preview", "fail", "FAILURE", workflow="")],
    ]})
    code, out, err = run_main(monkeypatch, capsys, FakeClock(), "--repo", str(repo), "ci", PR_URL)
    assert code == 1, (out, err)
    findings = repo / ".lanes/state/ci/PR-7.md"
    assert "00:15  fail      CI / test (FAILURE)  https://github.com/o/r/actions/runs/111/job/222" in out, out
    assert "CI failed on PR #7: 2 of 3 checks (CI / test, deploy-preview)" in out, out
    assert f"findings: {findings}" in out
    assert f"relaunch with them: lanes-tui recover {lane} --relaunch --note-file {findings}" in out, out
    assert f"recover {old} " not in out
    text = findings.read_text()
    assert text.startswith("# CI failed on pull request #7 (programme into main)")
    assert "## CI / test: fail (FAILURE)" in text and "## deploy-preview: fail (FAILURE)" in text
    assert "log line 199" in text and "log line 120" in text and "log line 119" not in text  # the last 80
    assert "the last 80 of 200 lines" in text
    assert "no log: not a GitHub Actions job; open its link" in text  # the other service's check
    assert "## CI / lint" not in text  # a passed check is no finding
    run_views = [c["argv"] for c in calls(state) if c["argv"][:2] == ["run", "view"]]
    assert run_views == [["run", "view", "--job", "222", "--log-failed", "-R", "github.com/o/r"]]

    code, out, _ = run_main(monkeypatch, capsys, FakeClock(), "--repo", str(repo), "ci", "7", "--json")
    data = json.loads(out)
    assert code == 1 and data["status"] == "failed" and data["lanes"] == [lane] and data["findings"] == str(findings)
    assert data["pr"] == {"number": 7, "url": PR_URL, "head": "programme", "base": "main"}


def test_timeout_exits_2_naming_what_is_still_running(programme: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    state = install_gh(tmp_path, monkeypatch, {"pr": pr_json(programme), "polls": [
        [check("test", "pass", "SUCCESS"), check("e2e", "pending", "IN_PROGRESS")]]})
    clock = FakeClock()
    start = clock.monotonic()
    code, out, err = run_main(monkeypatch, capsys, clock, "--repo", str(programme), "ci", "7",
                              "--timeout", "60", "--interval", "15")
    assert code == 2, (out, err)
    assert err.splitlines() == ["lanes-tui: CI of PR #7 still running after 01:00 (--timeout): 1 pending (CI / e2e); "
                                "follow it again: lanes-tui ci 7"], err
    assert clock.monotonic() - start == 60
    assert len([c for c in calls(state) if c["argv"][:2] == ["pr", "checks"]]) == 5  # at 0, 15, 30, 45 and 60 s


def test_a_gh_blip_is_ridden_out_and_no_checks_at_all_is_no_pass(programme: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    install_gh(tmp_path, monkeypatch, {"pr": pr_json(programme), "polls": [
        [check("test", "pending", "IN_PROGRESS")], {"error": "HTTP 502: Bad Gateway"},
        [check("test", "pass", "SUCCESS")]]})
    code, out, err = run_main(monkeypatch, capsys, FakeClock(), "--repo", str(programme), "ci", "7")
    assert code == 0, (out, err)
    assert "00:15  gh failed (1/3), asking again: gh pr checks 7 failed: HTTP 502: Bad Gateway" in out, out

    (tmp_path / "gh-state/polls.count").unlink()
    (tmp_path / "gh-state/scenario.json").write_text(json.dumps({"pr": pr_json(programme), "polls": [None]}))
    code, out, err = run_main(monkeypatch, capsys, FakeClock(), "--repo", str(programme), "ci", "7")
    assert code == 2 and "no checks reported on PR #7 after 03:00" in err, (out, err)


def test_without_gh_or_its_login_one_line_and_exit_2(programme: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git_dir = os.path.dirname(git(programme, "--exec-path"))
    no_gh = {**os.environ, "PATH": os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), "/usr/bin",
                                                     "/bin", git_dir])}
    if any(Path(d, "gh").exists() for d in no_gh["PATH"].split(os.pathsep)):
        pytest.skip("a real gh is on this machine's PATH")
    proc = cli(programme, "ci", "7", env=no_gh)
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert proc.stderr.splitlines() == [
        "lanes-tui: `gh` is not installed — install GitHub CLI (https://cli.github.com) and run `gh auth login`, "
        "or follow the PR's checks on the web"], proc.stderr

    state = install_gh(tmp_path, monkeypatch, {"auth": "logged-out"})
    proc = cli(programme, "ci", env={**no_gh, "PATH": f"{tmp_path / 'gh-bin'}{os.pathsep}{no_gh['PATH']}",
                                     "FAKE_GH_DIR": str(state)})
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "lanes-tui: `gh` is not logged in — run `gh auth login` (or set GH_TOKEN), or follow the PR's checks "
        "on the web"], proc.stderr


def test_finish_pr_watch_follows_the_pr_it_opened(programme: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    repo = programme
    (repo / "notes.txt").write_text("the programme's own work\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "notes")
    state = install_gh(tmp_path, monkeypatch, {"create": PR_URL, "pr": pr_json(repo), "polls": [
        [check("test", "pending", "IN_PROGRESS")], [check("test", "pass", "SUCCESS")]]})
    code, out, err = run_main(monkeypatch, capsys, FakeClock(), "--repo", str(repo), "finish", "--pr", "--watch")
    assert code == 0, (out, err)
    lines = out.splitlines()
    assert lines.index(f"PR {PR_URL}") < lines.index(f"following the checks of PR #7 {PR_URL}: every 15s, at most "
                                                      "3600s")
    assert lines[-1] == "CI passed on PR #7: 1 check"
    assert git(tmp_path, "--git-dir", str(tmp_path / "remote.git"), "rev-parse", "programme") == \
        git(repo, "rev-parse", "programme")  # pushed first, then the PR, then its checks
    assert [c["argv"][:3] for c in calls(state)][:3] == [["auth", "status"], ["pr", "create", "--fill"],
                                                         ["pr", "view", PR_URL]]
    assert all(c["pgid_is_pid"] for c in calls(state))  # finish's own gh calls too: each in its own group

    (state / "polls.count").unlink()
    code, out, err = run_main(monkeypatch, capsys, FakeClock(), "--repo", str(repo), "finish", "--pr", "--watch",
                              "--json")
    data = json.loads(out)
    assert code == 0 and data["pr"] == PR_URL and data["ci"]["status"] == "passed", (out, err)
    assert "CI passed on PR #7" in err  # the lines on stderr, stdout is the one JSON object

    code, _, err = run_main(monkeypatch, capsys, FakeClock(), "--repo", str(repo), "finish", "--watch")
    assert code == 2 and "--watch follows the pull request --pr opens" in err


async def test_ctrl_c_stops_the_gh_call_in_flight(programme: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    state = install_gh(tmp_path, monkeypatch, {"hang": True, "polls": []})
    pr = PullRequest(7, PR_URL, "programme", "main", "")
    follower = asyncio.create_task(follow_checks(programme, pr, clock=FakeClock(), on_line=lambda _: None))
    pid_file = state / "hanging.pid"
    for _ in range(2000):  # until the fake gh is in its call (the test waits on the file, not on time)
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.01)
    pid = int(pid_file.read_text())
    follower.cancel()  # what asyncio.run does to the follower on Ctrl-C
    with pytest.raises(asyncio.CancelledError):
        await follower
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped and reaped: nothing left running


def test_ci_is_the_leads_command() -> None:
    """It writes the lead's state folder and runs gh with the lead's token: never from a lane's shell."""
    from lanes_tui.app.cli.main import lane_refusal

    refusal = lane_refusal("ci", ["ci", "7"], {"LANES_LANE": "a-a1"})
    assert refusal is not None and refusal.startswith("lanes-tui ci is the lead's command")
