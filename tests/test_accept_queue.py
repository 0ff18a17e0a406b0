"""The accept queue: real sim lanes accepted in the radar's order, skipping a lane with nothing to merge,
stopping at the first other refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.engine.decisions.queue import QueuePlan, QueueReport, QueueStep, frozen_blockers, order_lanes
from lanes_tui.engine.git.radar import Conflict, RadarReport
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.widgets import ConfirmModal
from tests.conftest import git
from tests.fake_engine import FakeEngine, lane
from tests.helpers import cli, run_lane, status, wait_state, write_config


@pytest.fixture()
def programme(repo: Path) -> Path:
    git(repo, "checkout", "-q", "-b", "programme")
    write_config(repo)
    return repo


def test_the_queue_accepts_the_clean_lanes_in_order_and_stops_at_the_conflicting_one(programme: Path) -> None:
    repo = programme
    scripts = {"c1": "write README.md title from c1\n", "n1": "write one.txt one\n",
               "c2": "write README.md title from c2\n", "n2": "write two.txt two\n",
               "c3": "write README.md title from c3\n"}
    lanes = [run_lane(repo, script, lane_id=name) for name, script in scripts.items()]
    for lane_id in lanes:
        wait_state(repo, lane_id)
    start = git(repo, "rev-parse", "programme")

    dry = cli(repo, "accept", "--queue", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert [line.split()[1] for line in lines] == ["c1-a1", "n1-a1", "n2-a1", "c2-a1", "c3-a1"]
    assert "merges cleanly into programme" in lines[0]
    assert lines[3].endswith("last: its trial merge with c1-a1 (queued before it) conflicts in README.md")
    assert git(repo, "rev-parse", "programme") == start and {status(repo, x)["state"] for x in lanes} == {"ready"}

    run = cli(repo, "accept", "--queue")
    assert run.returncode == 1, run.stderr
    out = run.stdout.splitlines()
    assert len(out) == 5, out  # one line per lane
    assert [line.split()[:2] for line in out[:3]] == [["accepted", "c1-a1"], ["accepted", "n1-a1"],
                                                      ["accepted", "n2-a1"]]
    assert out[3] == ("stopped at c2-a1: accept c2-a1 stopped: rebase conflicts in README.md; "
                      "nothing was merged")
    assert out[4] == "left ready c3-a1: the queue stopped at c2-a1"

    assert git(repo, "log", "--format=%s", f"{start}..programme").splitlines() == [
        "lane n2-a1: write two.txt two", "lane n1-a1: write one.txt one", "lane c1-a1: write README.md title from c1"]
    assert git(repo, "show", "programme:README.md") == "title from c1"
    assert sorted(git(repo, "ls-tree", "--name-only", "programme").split()) == ["README.md", "calc.py", "one.txt",
                                                                                "two.txt"]
    assert "c2" not in git(repo, "log", "--format=%s", "programme")  # nothing merged from the conflicting lane
    states = {x: status(repo, x)["state"] for x in lanes}
    assert states == {"c1-a1": "accepted", "n1-a1": "accepted", "n2-a1": "accepted", "c2-a1": "conflict",
                      "c3-a1": "ready"}
    assert git(repo, "branch", "--list", "lane/c2-a1").strip() and git(repo, "branch", "--list", "lane/c3-a1").strip()


def test_the_queue_skips_a_lane_with_nothing_to_merge_and_accepts_the_lanes_around_it(programme: Path) -> None:
    repo = programme
    first = run_lane(repo, "write one.txt one\n", lane_id="first")
    wait_state(repo, first)
    # How a `ready` lane with nothing to merge arises: its agent gave up without writing anything
    # (LANE-FAILED, so not NO-CHANGES), and the lead's `check` judged the worktree as it is: the gates
    # pass on an empty diff.
    empty = run_lane(repo, "say giving up\nexit 1\n", lane_id="empty")
    wait_state(repo, empty)
    assert (status(repo, empty)["state"], status(repo, empty)["result"]) == ("exited", "LANE-FAILED")
    cli(repo, "check", empty, check=True)
    assert status(repo, empty)["state"] == "ready"
    third = run_lane(repo, "write two.txt two\n", lane_id="third")
    wait_state(repo, third)
    start = git(repo, "rev-parse", "programme")
    assert [line.split()[1] for line in cli(repo, "accept", "--queue", "--dry-run").stdout.splitlines()] == [
        first, empty, third]

    run = cli(repo, "accept", "--queue")
    assert run.returncode == 0, (run.stdout, run.stderr)
    out = run.stdout.splitlines()
    assert [line.split()[:2] for line in out] == [["accepted", first], ["skipped", f"{empty}:"],
                                                  ["accepted", third]], out
    assert out[1] == f"skipped {empty}: nothing to merge (abandon it: `lanes-tui abandon {empty}`)"
    assert git(repo, "log", "--format=%s", f"{start}..programme").splitlines() == [
        "lane third-a1: write two.txt two", "lane first-a1: write one.txt one"]
    assert {x: status(repo, x)["state"] for x in (first, empty, third)} == {
        first: "accepted", empty: "ready", third: "accepted"}

    again = cli(repo, "accept", "--queue", "--json")  # only the empty lane is left: skipped again, not a stop
    data = json.loads(again.stdout)
    assert again.returncode == 0 and data["ok"] is True, again.stdout
    assert data["steps"] == [{"id": empty, "state": "skipped",
                              "message": f"nothing to merge (abandon it: `lanes-tui abandon {empty}`)"}]


def test_a_superseded_lane_is_skipped_not_accepted_at_the_targets_own_commit(programme: Path) -> None:
    """Two lanes made the same change: after the first is merged, the second's rebase keeps nothing of
    its own. The queue skips it saying so, the target moves once, and the lane is not called accepted."""
    repo = programme
    first = run_lane(repo, "write same.txt same\n", lane_id="twin")
    second = run_lane(repo, "write same.txt same\n", lane_id="copy")
    wait_state(repo, first)
    wait_state(repo, second)
    start = git(repo, "rev-parse", "programme")
    run = cli(repo, "accept", "--queue")
    out = run.stdout.splitlines()
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert out[0].startswith(f"accepted {first}") and out[1] == (
        f"skipped {second}: nothing to merge (abandon it: `lanes-tui abandon {second}`)"), out
    assert git(repo, "log", "--format=%s", f"{start}..programme").splitlines() == ["lane twin-a1: write same.txt same"]
    after = status(repo, second)
    assert after["state"] == "exited" and after["state_reason"].startswith("superseded: its changes are already in "
                                                                           "programme"), after
    again = cli(repo, "accept", second)  # by hand: refused as a lane with nothing to merge, never a rebase again
    assert again.returncode != 0 and "accepted" not in again.stdout, (again.stdout, again.stderr)


def test_a_skip_does_not_stop_the_report_but_any_other_refusal_does() -> None:
    skip = QueueStep("e-a1", "skipped", "nothing to merge (abandon it: `lanes-tui abandon e-a1`)")
    done = QueueStep("a-a1", "accepted", "accepted a-a1 into programme at cafe000000")
    assert QueueReport((done, skip, done)).ok and QueueReport((skip,)).stopped_at is None
    assert QueueReport((skip,)).skipped == (skip,)
    refused = QueueStep("r-a1", "refused", "accept r-a1 refused: the worktree changed since its check")
    report = QueueReport((skip, refused, QueueStep("l-a1", "left", "the queue stopped at r-a1")))
    assert not report.ok and report.stopped_at == refused
    assert report.lines()[:2] == ["skipped e-a1: nothing to merge (abandon it: `lanes-tui abandon e-a1`)",
                                  "stopped at r-a1: accept r-a1 refused: the worktree changed since its check"]


async def test_the_dashboard_shows_a_skipped_lane(tmp_path: Path) -> None:
    class SkippingEngine(FakeEngine):
        async def accept_queue(self, plan: QueuePlan | None = None) -> QueueReport:
            self.calls.append(("accept_queue", plan.order if plan else None))
            return QueueReport((QueueStep("empty-a1", "skipped", "nothing to merge (abandon it: `lanes-tui abandon "
                                          "empty-a1`)"),
                                QueueStep("good-a1", "accepted", "accepted good-a1 into programme at cafe000000")))

    engine = SkippingEngine(tmp_path, [lane("empty-a1", "ready", created=1.0), lane("good-a1", "ready", created=2.0)])
    app = LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("m")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmModal)
        assert "a lane with nothing to merge is skipped" in modal.lines[-1]
        await pilot.press("y")
        await pilot.pause()
        await pilot.pause()
    shown = [(n.title, n.severity, n.message) for n in app._notifications if n.title == "Accept queue"]
    assert shown == [("Accept queue", "warning", "skipped empty-a1: nothing to merge (abandon it: `lanes-tui abandon "
                                                 "empty-a1`)\naccepted good-a1 into programme at cafe000000")]


def test_the_queue_with_nothing_ready_and_its_refusals(programme: Path) -> None:
    repo = programme
    empty = cli(repo, "accept", "--queue")
    assert (empty.returncode, empty.stdout.strip()) == (0, "no ready lanes: nothing to accept")
    assert cli(repo, "accept", "--queue", "--dry-run").stdout.strip() == "no ready lanes: nothing to accept"
    no_lane = cli(repo, "accept")
    assert no_lane.returncode == 2 and "accept needs a lane id" in no_lane.stderr
    both = cli(repo, "accept", "x-a1", "--queue")
    assert both.returncode == 2 and "--queue takes no lane id" in both.stderr


def record(lane_id: str, created: float, plan: str | None = None, ticket: str | None = None) -> LaneRecord:
    return LaneRecord(id=lane_id, slug=lane_id, attempt=1, task_type="backend", prompt="p", chain=["sim"], repo="/r",
                      worktree="/w", branch=f"lane/{lane_id}", base_sha="b" * 40, target_branch="programme",
                      state="ready", created=created, plan=plan, ticket=ticket)


def test_plan_lanes_follow_their_blockers_and_a_deferred_blocker_takes_them_along() -> None:
    graph = {"t1": (), "t2": ("t1",), "t3": ("t2",)}  # t3 waits for t1 through t2
    lanes = [record("solo-a1", 0), record("t3-a1", 1, "p", "t3"), record("t1-a1", 2, "p", "t1"),
             record("t2-a1", 3, "p", "t2"), record("late-a1", 4)]
    order = order_lanes(lanes, RadarReport(), lambda name: graph if name == "p" else None)
    assert [e.lane_id for e in order] == ["solo-a1", "t1-a1", "t2-a1", "t3-a1", "late-a1"]
    assert order[3].why.startswith("plan p ticket t3, after t1-a1, t2-a1")
    assert order[0].why.startswith("created ")

    target = RadarReport({"t1-a1": (Conflict("target", None, ("x.py",), "programme"),)})
    order = order_lanes(lanes, target, lambda name: graph if name == "p" else None)
    assert [(e.lane_id, e.last) for e in order] == [("solo-a1", False), ("late-a1", False), ("t1-a1", True),
                                                    ("t2-a1", True), ("t3-a1", True)]
    assert order[2].why == "last: its trial merge into programme conflicts in x.py"
    assert order[3].why == "last: after t1-a1, which it is blocked by and which went last"
    # An unreadable plan: creation time.
    assert [e.lane_id for e in order_lanes(lanes, RadarReport(), lambda name: None)] == [
        "solo-a1", "t3-a1", "t1-a1", "t2-a1", "late-a1"]


def test_frozen_blockers_read_the_launched_plan_and_trust_nothing(tmp_path: Path) -> None:
    folder = tmp_path / ".lanes" / "state" / "plans"
    (folder / "p").mkdir(parents=True)
    (folder / "p" / "plan.json").write_text(json.dumps({"plan": {"name": "p", "tickets": [
        {"id": "t1", "blockers": []}, {"id": "t2", "blockers": ["t1"]}]}, "frozen_at": 1.0}))
    (folder / "bad").mkdir()
    (folder / "bad" / "plan.json").write_text(json.dumps({"plan": {"tickets": [{"id": 3}]}}))
    read = frozen_blockers(tmp_path)
    assert read("p") == {"t1": (), "t2": ("t1",)}
    assert read("bad") is None and read("missing") is None and read("../p") is None


async def test_the_queue_key_shows_the_order_then_accepts(tmp_path: Path) -> None:
    engine = FakeEngine(tmp_path, [lane("first-a1", "ready", created=1.0), lane("busy-a1", "running"),
                                   lane("second-a1", "ready", created=2.0)])
    app = LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("m")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmModal) and modal.title_text == "Accept 2 ready lanes in this order?"
        assert modal.lines[:2] == ["1. first-a1   created earlier; merges cleanly",
                                   "2. second-a1  created earlier; merges cleanly"]
        await pilot.press("y")
        await pilot.pause()
        await pilot.pause()
    assert ("accept_queue", ["first-a1", "second-a1"]) in engine.calls
