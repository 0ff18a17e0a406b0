"""Gates, packets and the guarded accept / abandon / recover / finish, on real repos and real sim lanes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.helpers import cli, run_lane, status, wait_state, write_config

PY = sys.executable


def gate_recorder(log: Path, *, fail_if: str | None = None, sleep_s: float = 0.0) -> str:
    """A gate command that logs lane, start and end times (from the gate process itself)."""
    code = (f"import os,sys,time,json; t0=time.time(); time.sleep({sleep_s}); "
            f"open({str(log)!r},'a').write(json.dumps([os.environ['LANES_LANE'],t0,time.time()])+chr(10)); "
            + (f"sys.exit(1 if os.path.exists({fail_if!r}) else 0)" if fail_if else "sys.exit(0)"))
    # The log lives outside the worktree: the gates' confinement lets them write its folder (`[gates] writable`).
    return f"commands = [{json.dumps(PY + ' -c ' + _quote(code))}]\nwritable = [{json.dumps(str(log.parent) + '/')}]"


def _quote(code: str) -> str:
    import shlex

    return shlex.quote(code)


@pytest.fixture()
def programme(repo: Path) -> Path:
    """The lead works on a programme branch (main is protected by default)."""
    git(repo, "checkout", "-q", "-b", "programme")
    return repo


def gate_log(log: Path) -> list[list[object]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def lane_ready(repo: Path, script: str, lane_id: str) -> str:
    lane = run_lane(repo, script, lane_id=lane_id)
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["state"] == "ready", row
    return lane


def test_two_lanes_accept_fast_forward_then_rebase(programme: Path, tmp_path: Path) -> None:
    repo = programme
    log = tmp_path / "gates.log"
    write_config(repo, gates=gate_recorder(log))
    first = lane_ready(repo, "write one.txt first lane\n", "one")
    second = lane_ready(repo, "write two.txt second lane\n", "two")
    packet = json.loads((repo / ".lanes/state/lanes/one-a1/packet.json").read_text())
    assert packet["changed_files"] == ["one.txt"] and packet["gates_status"] == "passed"
    assert packet["review"] == "MISSING" and packet["next"] == "review" and packet["worktree_digest"]
    base = git(repo, "rev-parse", "programme")

    accepted = cli(repo, "accept", first)
    assert accepted.returncode == 0, accepted.stderr
    assert git(repo, "rev-parse", "programme^") == base  # a fast-forward by one commit
    accepted = cli(repo, "accept", second)
    assert accepted.returncode == 0, accepted.stderr

    assert (repo / "one.txt").read_text() == "first lane\n" and (repo / "two.txt").read_text() == "second lane\n"
    assert git(repo, "log", "--format=%s", "programme").splitlines()[:2] == [
        "lane two-a1: write two.txt second lane", "lane one-a1: write one.txt first lane"]
    assert git(repo, "branch", "--list", "lane/*") == ""
    assert git(repo, "worktree", "list").count("\n") == 0
    for lane in (first, second):
        assert status(repo, lane)["state"] == "accepted"
        assert not Path(status(repo, lane)["worktree"]).exists()
    runs = [entry[0] for entry in gate_log(log)]
    assert runs.count("two-a1") == 2, "the second lane's gates ran again after its rebase"
    assert runs.count("one-a1") == 1


def test_conflicting_lanes_end_in_conflict(programme: Path) -> None:
    repo = programme
    write_config(repo)
    first = lane_ready(repo, "write README.md title from lane A\n", "ca")
    second = lane_ready(repo, "write README.md title from lane B\n", "cb")
    assert cli(repo, "accept", first).returncode == 0
    target_after_first = git(repo, "rev-parse", "programme")
    refused = cli(repo, "accept", second)
    assert refused.returncode == 1
    assert "README.md" in refused.stderr and "nothing was merged" in refused.stderr
    row = status(repo, second)
    assert row["state"] == "conflict" and "README.md" in row["state_reason"]
    assert git(repo, "rev-parse", "programme") == target_after_first
    assert git(repo, "log", "--format=%s", "-1", "programme") == "lane ca-a1: write README.md title from lane A"
    assert Path(row["worktree"]).is_dir() and git(repo, "branch", "--list", "lane/cb-a1").strip()
    packet = json.loads((repo / ".lanes/state/lanes/cb-a1/packet.json").read_text())
    assert packet["conflict_files"] == ["README.md"]
    assert not (Path(row["worktree"]) / ".git").is_dir()  # still a worktree, not a clone
    assert "rebase" not in git(Path(row["worktree"]), "status")  # the rebase was aborted


def test_failing_gate_rejects_and_override_accepts(programme: Path, tmp_path: Path) -> None:
    repo = programme
    write_config(repo, gates=gate_recorder(tmp_path / "g.log", fail_if="bad.txt"))
    lane = run_lane(repo, "write bad.txt breaks the gate\n", lane_id="bad")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["state"] == "rejected"
    packet = json.loads((repo / ".lanes/state/lanes/bad-a1/packet.json").read_text())
    assert packet["gates_status"] == "failed" and packet["gates"][0]["exit_code"] == 1
    assert packet["next"] == "redo"
    refused = cli(repo, "accept", lane)
    assert refused.returncode != 0 and "not ready" in refused.stderr and "--override" in refused.stderr
    assert status(repo, lane)["state"] == "rejected"
    ok = cli(repo, "accept", lane, "--override", "the gate is flaky; reviewed by hand")
    assert ok.returncode == 0, ok.stderr
    packet = json.loads((repo / ".lanes/state/lanes/bad-a1/packet.json").read_text())
    assert packet["override"] == "the gate is flaky; reviewed by hand"
    assert (repo / "bad.txt").exists()


def test_worktree_changed_after_check_is_refused_until_checked(programme: Path) -> None:
    repo = programme
    write_config(repo)
    lane = lane_ready(repo, "write feature.txt v1\n", "drift")
    worktree = Path(status(repo, lane)["worktree"])
    (worktree / "feature.txt").write_text("v2 sneaked in after the check\n")
    refused = cli(repo, "accept", lane)
    assert refused.returncode != 0 and "changed since its check" in refused.stderr
    assert cli(repo, "check", lane).returncode == 0
    assert cli(repo, "accept", lane).returncode == 0
    assert (repo / "feature.txt").read_text() == "v2 sneaked in after the check\n"


def test_protected_target_and_dirty_checkout_are_refused(repo: Path) -> None:
    write_config(repo)
    lane = lane_ready(repo, "write calc.py 'def add(a, b): return b + a'\n", "prot")
    refused = cli(repo, "accept", lane)
    assert refused.returncode != 0 and "protected" in refused.stderr
    git(repo, "checkout", "-q", "-b", "programme")
    git(repo, "branch", "-f", "main", "HEAD")
    store_record = repo / ".lanes/state/lanes/prot-a1/lane.json"
    record = json.loads(store_record.read_text())
    record["target_branch"] = "programme"
    store_record.write_text(json.dumps(record))
    # A record edited by hand is refused until a check writes it again (its seal: docs/reliability.md).
    edited = cli(repo, "accept", lane)
    assert edited.returncode != 0 and "lane.json was changed outside lanes-tui" in edited.stderr
    assert cli(repo, "check", lane).returncode == 0
    (repo / "calc.py").write_text("# the lead's own unsaved edit\n")
    refused = cli(repo, "accept", lane)
    assert refused.returncode != 0 and "uncommitted changes" in refused.stderr and "calc.py" in refused.stderr
    git(repo, "checkout", "calc.py")
    assert cli(repo, "accept", lane).returncode == 0


@pytest.mark.parametrize("point", ["commit:before", "commit:after", "rebase:before", "rebase:after",
                                   "merge:before", "merge:after", "cleanup:before", "cleanup:after"])
def test_accept_killed_at_each_step_is_finished_or_rolled_back(programme: Path, point: str) -> None:
    repo = programme
    write_config(repo)
    lane = lane_ready(repo, "write killed.txt survives\n", "crash")
    if point.startswith("rebase"):  # make the target move so the accept must rebase
        (repo / "other.txt").write_text("moved on\n")
        git(repo, "add", "other.txt")
        git(repo, "commit", "-q", "-m", "the programme moved")
    before = git(repo, "rev-parse", "programme")
    env = dict(__import__("os").environ, LANES_TUI_CRASH_AT=point)
    crashed = cli(repo, "accept", lane, env=env)
    assert crashed.returncode == -9, (crashed.returncode, crashed.stderr)
    assert (repo / ".lanes/state/lanes/crash-a1/accept.json").exists()
    row = status(repo, lane)  # `status` reconciles: the journal is resolved here
    assert not (repo / ".lanes/state/lanes/crash-a1/accept.json").exists()
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    after = git(repo, "rev-parse", "programme")
    if row["state"] == "accepted":
        assert point in ("merge:after", "cleanup:before", "cleanup:after")
        assert (repo / "killed.txt").read_text() == "survives\n"
        assert git(repo, "branch", "--list", "lane/crash-a1") == ""
        assert not Path(row["worktree"]).exists()
    else:
        assert row["state"] == "ready", row
        assert after == before, "nothing was merged"
        assert Path(row["worktree"]).is_dir()
        if point != "rebase:after":
            assert cli(repo, "accept", lane).returncode == 0, "the rolled back lane can be accepted"
        else:
            assert cli(repo, "check", lane).returncode == 0
            assert cli(repo, "accept", lane).returncode == 0
        assert (repo / "killed.txt").read_text() == "survives\n"


def test_heavy_slot_serialises_gates(programme: Path, tmp_path: Path) -> None:
    repo = programme
    log = tmp_path / "gates.log"
    write_config(repo, gates=gate_recorder(log, sleep_s=0.6))
    lanes = [run_lane(repo, f"write f{i}.txt x\n", lane_id=f"slot{i}") for i in range(2)]
    for lane in lanes:
        wait_state(repo, lane)
    runs = sorted(gate_log(log), key=lambda r: r[1])
    assert len(runs) == 2
    assert runs[0][2] <= runs[1][1], f"gates overlapped: {runs}"


def test_gate_waiting_past_its_budget_is_not_run(programme: Path) -> None:
    from lanes_tui.engine.core import slots
    from lanes_tui.engine.decisions.gates.run import heavy_slot_dir

    repo = programme
    write_config(repo, gates='commands = ["true"]\nslot_wait_s = 0.5')
    held = slots.try_acquire(heavy_slot_dir(), 1, {"lane": "someone-else"})
    assert held is not None
    try:
        lane = run_lane(repo, "write f.txt x\n", lane_id="starved")
        wait_state(repo, lane)
    finally:
        held.release()
    row = status(repo, lane)
    assert row["state"] == "exited" and "not run" in row["state_reason"]
    packet = json.loads((repo / ".lanes/state/lanes/starved-a1/packet.json").read_text())
    assert packet["gates_status"] == "not-run"
    assert all(g["status"] == "not-run" and "someone-else" in g["output_tail"] for g in packet["gates"])
    assert cli(repo, "check", lane).returncode == 0
    assert status(repo, lane)["state"] == "ready"


@pytest.mark.parametrize("edit", [{"branch": "main"}, {"branch": "programme"}, {"branch": "lane/someone-else-a1"},
                                  {"worktree": "REPO"}, {"worktree": "/tmp"}, {"worktree": "OUTSIDE"}])
def test_abandon_refuses_edited_state(programme: Path, tmp_path: Path, edit: dict[str, str]) -> None:
    repo = programme
    write_config(repo)
    lane = lane_ready(repo, "write x.txt x\n", "guard")
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep me")
    path = repo / ".lanes/state/lanes/guard-a1/lane.json"
    record = json.loads(path.read_text())
    for key, value in edit.items():
        record[key] = {"REPO": str(repo), "OUTSIDE": str(outside)}.get(value, value)
    path.write_text(json.dumps(record))
    refused = cli(repo, "abandon", lane)
    assert refused.returncode != 0 and "refusing to delete it" in refused.stderr
    assert git(repo, "branch", "--list", "main", "programme").count("\n") == 1
    assert (outside / "keep.txt").exists() and (repo / "README.md").exists()


def test_abandon_removes_worktree_and_branch_and_keeps_logs(programme: Path) -> None:
    repo = programme
    write_config(repo)
    lane = lane_ready(repo, "write x.txt x\n", "drop")
    worktree = Path(status(repo, lane)["worktree"])
    git(worktree, "add", "x.txt")
    git(worktree, "commit", "-q", "-m", "a commit only the lane has")
    refused = cli(repo, "abandon", lane)
    assert refused.returncode != 0 and "1 commit(s)" in refused.stderr and "--force" in refused.stderr
    assert worktree.is_dir()
    done = cli(repo, "abandon", lane, "--force")
    assert done.returncode == 0, done.stderr
    assert not worktree.exists() and git(repo, "branch", "--list", "lane/*") == ""
    assert status(repo, lane)["state"] == "abandoned"
    assert (repo / ".lanes/state/lanes/drop-a1/output.log").exists()
    assert (repo / ".lanes/state/lanes/drop-a1/packet.json").exists()


def test_abandon_stops_a_running_lane(programme: Path) -> None:
    repo = programme
    write_config(repo)
    lane = run_lane(repo, "spawn-setsid 600\nsleep 600\n", lane_id="busy")
    wait_state(repo, lane, "running")
    assert cli(repo, "abandon", lane).returncode == 0
    assert status(repo, lane)["state"] == "abandoned"


def test_recover_relaunch_of_stalled_lane_carries_the_stall_report(programme: Path) -> None:
    repo = programme
    write_config(repo, idle_timeout_s=1.0, sample_s=0.2)
    lane = run_lane(repo, "say starting\nsleep 600\n", lane_id="stuck")
    wait_state(repo, lane, "stalled")
    wait_state(repo, lane)
    shown = cli(repo, "recover", lane)
    assert shown.returncode == 0 and "stalled after" in shown.stdout and "relaunch:" in shown.stdout
    relaunched = cli(repo, "recover", lane, "--relaunch")
    assert relaunched.returncode == 0, relaunched.stderr
    new = relaunched.stdout.strip().splitlines()[-1]
    assert new == "stuck-a2"
    record = json.loads((repo / ".lanes/state/lanes/stuck-a2/lane.json").read_text())
    assert "## Findings from attempt 1" in record["prompt"] and "Stall report: idle" in record["prompt"]
    assert record["attempt"] == 2 and Path(record["worktree"]).name == "stuck-a2"
    assert status(repo, lane)["state"] == "stalled"
    assert json.loads((repo / ".lanes/state/lanes/stuck-a1/lane.json").read_text())["superseded_by"] == "stuck-a2"
    assert cli(repo, "abandon", "stuck-a2").returncode == 0  # attempt 2 sleeps too; stop it


def test_recover_recheck_of_rejected_lane(programme: Path, tmp_path: Path) -> None:
    repo = programme
    write_config(repo, gates=gate_recorder(tmp_path / "g.log", fail_if="bad.txt"))
    lane = run_lane(repo, "write bad.txt x\n", lane_id="fixme")
    wait_state(repo, lane)
    assert status(repo, lane)["state"] == "rejected"
    (Path(status(repo, lane)["worktree"]) / "bad.txt").unlink()  # the lead fixes it by hand
    assert cli(repo, "recover", lane, "--recheck").returncode == 0
    assert status(repo, lane)["state"] == "ready"


def test_finish_removes_merged_and_lists_leftovers(programme: Path) -> None:
    repo = programme
    write_config(repo)
    merged = run_lane(repo, "say nothing to change\n", lane_id="noop")  # NO-CHANGES: its branch is the target's
    wait_state(repo, merged)
    assert status(repo, merged)["result"] == "NO-CHANGES"
    dirty = lane_ready(repo, "write d.txt x\n", "dirty")
    report = cli(repo, "finish")
    assert report.returncode == 1, "a leftover: exit 1"
    assert "lane/noop-a1" in report.stdout and "DIRTY" in report.stdout and "dirty-a1" in report.stdout
    assert "LEFTOVERS: 1" in report.stdout and "PUSHED " not in report.stdout, report.stdout
    assert report.stdout.splitlines()[-1] == ("NOT-PUSHED: 1 leftover remains (listed above); push anyway with "
                                              "`--push-anyway`")
    assert f"abandoned {merged}: it changed nothing (its branch has no commit of its own)" in report.stdout
    assert not Path(status(repo, merged)["worktree"]).exists()
    assert Path(status(repo, dirty)["worktree"]).exists()
    cli(repo, "abandon", dirty, check=True)
    again = cli(repo, "finish")  # a project with no remote: said, not silent
    assert again.returncode == 0 and again.stdout.splitlines() == ["nothing to finish", "NOT-PUSHED: no remote"], \
        again.stdout


def test_stopping_a_lane_during_its_gates_stops_the_gates(programme: Path, tmp_path: Path) -> None:
    import asyncio

    from lanes_tui.engine.lanes.launcher import stop_lane

    repo = programme
    write_config(repo, gates=gate_recorder(tmp_path / "g.log", sleep_s=120))
    lane = run_lane(repo, "write f.txt x\n", lane_id="slowgate")
    wait_state(repo, lane, "checking")
    leftovers = asyncio.run(stop_lane(repo, lane))
    assert leftovers == [], "the supervisor stopped its gate itself"
    row = status(repo, lane)
    assert row["state"] == "exited" and "gates ran" in row["state_reason"]
    assert not (tmp_path / "g.log").exists(), "the gate never finished"
