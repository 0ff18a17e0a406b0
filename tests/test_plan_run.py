"""Plans run with real sim lanes: waves, scope owners, the plan supervisor, restarts, relaunch and takeover.

Every lane is a real detached supervisor running the sim; the plan supervisor is the real detached
process `plan launch` starts. The lead's part is played with the command line (`accept`, `abandon`,
`recover --relaunch`, `plan amend`), or with the dashboard's `Engine` where the test says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine import Engine, LaunchRequest, launch_lane, load_config, stop_lane
from lanes_tui.engine.plans.state import PlanStore, plan_names
from lanes_tui.engine.plans.supervisor import plan_supervisor_alive, plan_supervisor_key, stop_plan_supervisor_now
from lanes_tui.engine.state.paths import StatePaths
from tests.conftest import git
from tests.helpers import cli, wait_for, wait_state, write_config


@pytest.fixture()
def plan_repo(repo: Path) -> Iterator[Path]:
    """The test repository, configured for sim lanes that may merge into `main`; everything the test
    started (plan supervisors, lanes) is stopped at the end, whatever happened."""
    write_config(repo, lanes_extra="protected_branches = []")
    yield repo
    for name in plan_names(repo):
        stop_plan_supervisor_now(repo, name, term_s=10.0)

    async def stop_all() -> None:
        await asyncio.gather(*(stop_lane(repo, lane) for lane in StatePaths(repo).lane_ids()))

    asyncio.run(stop_all())


def write_plan(path: Path, name: str, tickets: list[dict[str, Any]]) -> Path:
    lines = [f'[plan]\nname = "{name}"\n']
    for ticket in tickets:
        lines.append("[[tickets]]")
        for key, value in ticket.items():
            lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    path.write_text("\n".join(lines))
    return path


def ticket(tid: str, *blockers: str, script: str | None = None, attempts: int = 2) -> dict[str, Any]:
    return {"id": tid, "title": f"ticket {tid}", "prompt": script or f"write {tid}.txt made by {tid}\nsay done\n",
            "scope": [f"{tid}.txt"], "blockers": list(blockers), "attempts": attempts}


def lane_exists(repo: Path, lane: str) -> bool:
    return (repo / ".lanes/state/lanes" / lane / "lane.json").exists()


def record(repo: Path, lane: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((repo / ".lanes/state/lanes" / lane / "lane.json").read_text())
    return data


def plan_status(repo: Path, name: str) -> dict[str, dict[str, Any]]:
    rows = json.loads(cli(repo, "plan", "status", name, "--json", check=True).stdout)
    return {row["id"]: row for row in rows}


def accepted_at(repo: Path, lane: str) -> float:
    events = [json.loads(x) for x in (repo / ".lanes/state/lanes" / lane / "events.jsonl").read_text().splitlines()]
    return next(e["t"] for e in events if e.get("type") == "state" and e.get("state") == "accepted")


def accept(repo: Path, lane: str) -> None:
    proc = cli(repo, "accept", lane)
    assert proc.returncode == 0, proc.stderr


def test_five_tickets_in_two_waves_run_to_the_end_with_no_dashboard(plan_repo: Path, tmp_path: Path) -> None:
    repo = plan_repo
    plan = write_plan(tmp_path / "five.toml", "five", [
        ticket("a"), ticket("b"), ticket("c"), ticket("d", "a", "b"), ticket("e", "c")])
    launched = cli(repo, "plan", "launch", str(plan), check=True).stdout
    assert "plan five: 5 tickets in 2 waves" in launched
    for tid in "abc":
        assert f"started {tid}-a1 (ticket {tid})" in launched
    assert "plan supervisor running (pid" in launched
    for lane in ("a-a1", "b-a1", "c-a1"):
        wait_state(repo, lane, "ready")
    rows = plan_status(repo, "five")
    assert {tid: rows[tid]["state"] for tid in "abcde"} == {
        "a": "ready", "b": "ready", "c": "ready", "d": "blocked", "e": "blocked"}
    assert rows["d"]["blocked_by"] == ["a", "b"] and rows["e"]["blocked_by"] == ["c"]
    assert rows["a"]["scope"] == ["a.txt"] and rows["a"]["owned_files"] == 1
    assert record(repo, "a-a1")["plan"] == "five" and record(repo, "a-a1")["ticket"] == "a"
    assert record(repo, "a-a1")["scope"] == ["a.txt"]

    accept(repo, "a-a1")
    time.sleep(2.5)  # more than a tick of the plan supervisor: d still waits for b
    assert not lane_exists(repo, "d-a1")
    accept(repo, "b-a1")
    wait_for(lambda: lane_exists(repo, "d-a1"), timeout=30)
    assert record(repo, "d-a1")["created"] > accepted_at(repo, "b-a1")
    assert not lane_exists(repo, "e-a1")  # its blocker c is ready, not accepted
    accept(repo, "c-a1")
    wait_for(lambda: lane_exists(repo, "e-a1"), timeout=30)
    assert record(repo, "e-a1")["created"] > accepted_at(repo, "c-a1")
    for lane in ("d-a1", "e-a1"):
        wait_state(repo, lane, "ready")
        accept(repo, lane)

    wait_for(lambda: not plan_supervisor_alive(repo, "five"), timeout=30)  # done: it stops by itself
    rows = plan_status(repo, "five")
    assert {row["state"] for row in rows.values()} == {"accepted"}
    assert PlanStore(repo, "five").state() == "done"
    for tid in "abcde":
        assert git(repo, "show", f"main:{tid}.txt") == f"made by {tid}"
    log = PlanStore(repo, "five").read_log()
    starts = {e["ticket"]: e["who"] for e in log if e["what"] == "start"}
    assert set(starts) == set("abcde")
    assert starts["d"].startswith("plan supervisor (pid") and starts["a"].startswith("lead (")
    assert log[-1]["what"] == "done"
    assert "plan five: done" in cli(repo, "plan", "status", "five", check=True).stdout


def test_a_ticket_waits_for_a_lane_that_owns_its_files(plan_repo: Path, tmp_path: Path) -> None:
    """Lanes started by hand (no plan) own their scope too; the dashboard's engine ticks the plan."""
    repo = plan_repo
    config = load_config(repo)
    launch_lane(repo, config, LaunchRequest(prompt="write shared/x.txt held\n", slug="hold", scope=("shared/",)))
    launch_lane(repo, config, LaunchRequest(prompt="write notes/n.txt kept\nsleep 600\n", slug="keep",
                                            scope=("notes/n.txt",)))
    plan = write_plan(tmp_path / "own.toml", "own", [
        {**ticket("s"), "scope": ["shared/y.txt"], "prompt": "write shared/y.txt from the plan\n"},
        {**ticket("n"), "scope": ["notes/"], "prompt": "write notes/m.txt from the plan\n"}])
    launched = cli(repo, "plan", "launch", str(plan), "--no-supervisor", check=True).stdout
    assert "started" not in launched and "no plan supervisor" in launched
    rows = plan_status(repo, "own")
    assert rows["s"]["state"] == "waiting" and "lane hold-a1" in rows["s"]["reason"]
    assert "owns shared/" in rows["s"]["reason"]
    assert rows["n"]["state"] == "waiting" and "lane keep-a1" in rows["n"]["reason"]
    wait_state(repo, "hold-a1", "ready")

    async def as_the_dashboard() -> None:
        async with Engine(repo) as engine:
            await wait_async(lambda: {s.id: s.state for s in engine.plan_statuses()} == {"s": "waiting",
                                                                                       "n": "waiting"})
            engine.plans.tick_s = 3600.0  # no background tick for now: the key alone starts s
            assert await engine.advance_plans() == []  # nothing can start yet
            accepted = await asyncio.to_thread(cli, repo, "accept", "hold-a1")
            assert accepted.returncode == 0, accepted.stderr
            assert await engine.advance_plans() == ["s-a1"]  # the Plan pane's key: at once
            engine.plans.tick_s = 0.5
            abandoned = await asyncio.to_thread(cli, repo, "abandon", "keep-a1")
            assert abandoned.returncode == 0, abandoned.stderr
            await wait_async(lambda: lane_exists(repo, "n-a1"))  # the engine's own tick
            await wait_async(lambda: {s.id: s.state for s in engine.plan_statuses()}.get("n") == "running")

    asyncio.run(as_the_dashboard())
    for lane in ("s-a1", "n-a1"):
        wait_state(repo, lane, "ready")
    log = PlanStore(repo, "own").read_log()
    assert [e["who"].startswith("scheduler (dashboard") for e in log if e["what"] == "start"] == [True, True]


async def wait_async(predicate: Any, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.1)


def test_the_plan_survives_a_restart_of_everything(plan_repo: Path, tmp_path: Path) -> None:
    repo = plan_repo
    plan = write_plan(tmp_path / "rs.toml", "rs", [
        ticket("first"), ticket("second", "first"), ticket("long", script="say long\nsleep 600\n")])
    cli(repo, "plan", "launch", str(plan), check=True)
    wait_state(repo, "first-a1", "ready")
    wait_state(repo, "long-a1", "running")
    # Everything stops hard: the plan supervisor, and the supervisor of a running lane (its agent too).
    key = plan_supervisor_key(repo, "rs")
    assert key is not None and key.alive()
    os.kill(key.pid, signal.SIGKILL)
    lane_sup = record(repo, "long-a1")["supervisor_pid"]
    os.kill(lane_sup, signal.SIGKILL)
    wait_for(lambda: not key.alive() and not plan_supervisor_alive(repo, "rs"), timeout=10)
    accept(repo, "first-a1")
    time.sleep(3)  # nothing ticks the plan now
    assert not lane_exists(repo, "second-a1")
    rows = plan_status(repo, "rs")  # rebuilt from disk: second can start, long's lane is lost
    assert rows["first"]["state"] == "accepted"
    assert rows["second"]["state"] == "waiting" and "can start now" in rows["second"]["reason"]
    assert rows["long"]["state"] == "waiting" and "long-a1 ended lost" in rows["long"]["reason"]
    assert "no plan supervisor (`lanes-tui plan resume rs`)" in cli(repo, "plan", "status", check=True).stdout

    resumed = cli(repo, "plan", "resume", "rs", check=True).stdout
    assert "plan supervisor of rs started (pid" in resumed
    wait_for(lambda: lane_exists(repo, "second-a1") and lane_exists(repo, "long-a2"), timeout=30)
    wait_for(lambda: record(repo, "long-a1")["superseded_by"] == "long-a2", timeout=10)  # marked once started
    assert "## Findings from attempt 1" in record(repo, "long-a2")["prompt"]
    assert "was running already" in cli(repo, "plan", "resume", "rs", check=True).stdout  # one per plan
    whos = {e["ticket"]: e["who"] for e in PlanStore(repo, "rs").read_log() if e["what"] in ("start", "relaunch")
            and e["ticket"] != "first"}
    assert all(who.startswith("plan supervisor") for who in whos.values()) and set(whos) == {"second", "long"}

    cancelled = cli(repo, "plan", "cancel", "rs", "--reason", "test over", check=True).stdout
    assert "plan rs cancelled" in cancelled and "long-a2" in cancelled
    assert not plan_supervisor_alive(repo, "rs")
    assert {row["state"] for tid, row in plan_status(repo, "rs").items() if tid != "first"} == {"cancelled"}
    assert PlanStore(repo, "rs").read_log()[-1]["what"] == "cancel"


def test_relaunch_takeover_and_the_leads_hand(plan_repo: Path, tmp_path: Path) -> None:
    repo = plan_repo
    flag = tmp_path / "flaky-flag"
    flag.write_text("fail the first attempt")
    tickets = [ticket("flaky", script=f"sleep 2\nfail-if-exists {flag}\nwrite flaky.txt ok\n", attempts=2),
               ticket("doomed", script="say failing\nexit 3\n", attempts=1)]
    plan = write_plan(tmp_path / "retry.toml", "retry", tickets)
    cli(repo, "plan", "launch", str(plan), check=True)
    wait_state(repo, "flaky-a1")
    flag.unlink()  # the next attempt passes
    wait_for(lambda: lane_exists(repo, "flaky-a2"), timeout=30)
    wait_state(repo, "flaky-a2", "ready")
    assert record(repo, "flaky-a1")["result"] == "LANE-FAILED"
    assert "## Findings from attempt 1" in record(repo, "flaky-a2")["prompt"]
    wait_for(lambda: plan_status(repo, "retry")["doomed"]["state"] == "takeover", timeout=30)
    rows = plan_status(repo, "retry")
    assert (rows["flaky"]["state"], rows["flaky"]["attempts"]) == ("ready", 2)
    assert "lanes-tui recover doomed-a1 --relaunch" in rows["doomed"]["reason"]

    # The lead relaunches by hand: the scheduler follows the new lane (and hands it back when it fails).
    relaunched = cli(repo, "recover", "doomed-a1", "--relaunch")
    assert relaunched.returncode == 0, relaunched.stderr
    assert lane_exists(repo, "doomed-a2")
    wait_for(lambda: plan_status(repo, "retry")["doomed"]["lane"] == "doomed-a2", timeout=10)
    wait_state(repo, "doomed-a2")
    wait_for(lambda: plan_status(repo, "retry")["doomed"]["state"] == "takeover", timeout=30)
    # Then the lead amends the ticket: its attempts start again, with the new prompt.
    tickets[1] = ticket("doomed", script="write doomed.txt fixed\n", attempts=1)
    amended = cli(repo, "plan", "amend", "retry", "--reason", "doomed needed a real prompt",
                  str(write_plan(tmp_path / "retry2.toml", "retry", tickets)), check=True).stdout
    assert "plan retry amended: doomed needed a real prompt" in amended
    diff = [line.strip() for line in amended.splitlines()]
    assert '+      "prompt": "write doomed.txt fixed\\n",' in diff
    assert '-      "prompt": "say failing\\nexit 3\\n",' in diff
    wait_for(lambda: lane_exists(repo, "doomed-a3"), timeout=30)
    wait_state(repo, "doomed-a3", "ready")
    assert record(repo, "doomed-a3")["prompt"].startswith("write doomed.txt fixed\n")
    entry = next(e for e in PlanStore(repo, "retry").read_log() if e["what"] == "amend")
    assert entry["why"] == "doomed needed a real prompt" and entry["changed"] == ["doomed"] and entry["diff"]
    logged = cli(repo, "plan", "log", "retry", check=True).stdout
    assert "amend: doomed needed a real prompt" in logged and "takeover ticket doomed" in logged
