"""The plan scheduler's decisions, fed with scripted lane histories (no process, no git).

`decide` is pure: each test writes the lanes as they would be at one moment and reads what the
scheduler makes of them. The last tests rebuild the same decisions from files on disk, as a
restarted scheduler does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.plans.decide import Decision, LaneFact, decide
from lanes_tui.engine.plans.model import Plan, Ticket
from lanes_tui.engine.plans.scheduler import plan_decision, plan_statuses
from lanes_tui.engine.plans.state import FrozenPlan, PlanStore, TicketMemo
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

REPO = Path("/work/repo")
OTHER = Path("/work/other")
FROZEN_AT = 1000.0


def ticket(tid: str, *blockers: str, scope: tuple[str, ...] = (), attempts: int = 2, repo: str | None = None) -> Ticket:
    return Ticket(id=tid, title=f"ticket {tid}", prompt=f"say {tid}", scope=scope or (f"{tid}.txt",),
                  blockers=blockers, attempts=attempts, repo=repo)


def frozen(*tickets: Ticket, name: str = "p") -> FrozenPlan:
    return FrozenPlan(Plan(name=name, tickets=tickets), REPO, FROZEN_AT)


def lane(lane_id: str, state: str, *, result: str | None = None, repo: Path = REPO, plan: str | None = "p",
         scope: tuple[str, ...] | None = None, created: float = 2000.0, alive: bool = False,
         superseded_by: str | None = None) -> LaneFact:
    slug, _, attempt = lane_id.rpartition("-a")
    return LaneFact(id=lane_id, repo=repo, state=state, result=result, attempt=int(attempt),
                    scope=scope if scope is not None else (f"{slug}.txt",), plan=plan,
                    ticket=slug if plan else None, created=created + int(attempt), supervisor_alive=alive,
                    superseded_by=superseded_by, reason="because")


def look(plan: FrozenPlan, lanes: list[LaneFact], *, state: str = "open", memos: dict[str, TicketMemo] | None = None,
         max_parallel: int = 6, now: float = 5000.0) -> Decision:
    return decide(plan, state, memos or {}, lanes, now=now, max_parallel=max_parallel)


def states(decision: Decision) -> dict[str, str]:
    return {s.id: s.state for s in decision.statuses}


def launched(decision: Decision) -> list[str]:
    return [launch.ticket for launch in decision.launches]


# waves ---------------------------------------------------------------------------------------------

def test_the_second_wave_waits_for_every_blocker_to_be_accepted() -> None:
    plan = frozen(ticket("a"), ticket("b"), ticket("c", "a", "b"))
    first = look(plan, [])
    assert launched(first) == ["a", "b"]
    assert states(first) == {"a": "waiting", "b": "waiting", "c": "blocked"}
    assert first.statuses[2].blocked_by == ("a", "b")
    assert "waits for a, b to be accepted" in first.statuses[2].reason

    running = look(plan, [lane("a-a1", "running"), lane("b-a1", "ready")])
    assert launched(running) == []
    assert states(running) == {"a": "running", "b": "ready", "c": "blocked"}
    assert "lanes-tui accept b-a1" in running.statuses[1].reason

    half = look(plan, [lane("a-a1", "accepted"), lane("b-a1", "ready")])
    assert launched(half) == [] and half.statuses[2].blocked_by == ("b",)

    both = look(plan, [lane("a-a1", "accepted"), lane("b-a1", "accepted")])
    assert launched(both) == ["c"]
    assert both.launches[0].after is None and "blockers are accepted (a, b)" in both.launches[0].why

    done = look(plan, [lane("a-a1", "accepted"), lane("b-a1", "accepted"), lane("c-a1", "accepted")])
    assert done.done and done.finished and states(done) == dict.fromkeys("abc", "accepted")


def test_at_most_max_parallel_tickets_run() -> None:
    plan = frozen(ticket("a"), ticket("b"), ticket("c"))
    first = look(plan, [], max_parallel=2)
    assert launched(first) == ["a", "b"]
    assert "max_parallel 2" in first.statuses[2].reason
    later = look(plan, [lane("a-a1", "running"), lane("b-a1", "ready")], max_parallel=2)
    assert launched(later) == ["c"]  # a ready lane no longer counts as running


# scopes ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("mine", "theirs"), [
    (("src/app.py",), ("src/app.py",)),  # the same file
    (("src/app.py",), ("src/",)),  # a file inside a folder they own
    (("src/",), ("src/api/x.py",)),  # a folder holding a file they own
])
def test_a_ticket_waits_while_an_active_lane_owns_its_files(mine: tuple[str, ...], theirs: tuple[str, ...]) -> None:
    plan = frozen(ticket("t", scope=mine))
    for state in ("queued", "running", "waiting", "checking", "ready", "conflict"):
        decision = look(plan, [lane("manual-a1", state, plan=None, scope=theirs, created=10.0)])
        assert launched(decision) == [], state
        assert states(decision) == {"t": "waiting"}
        assert f"lane manual-a1 is {state} and owns {theirs[0]}" in decision.statuses[0].reason
    for state in ("accepted", "abandoned", "rejected", "lost"):
        assert launched(look(plan, [lane("manual-a1", state, plan=None, scope=theirs)])) == ["t"], state


def test_scope_owners_elsewhere_do_not_count() -> None:
    plan = frozen(ticket("t", scope=("src/app.py",)))
    others = [
        lane("x-a1", "running", scope=("src/app.py",), repo=OTHER),  # another repository
        lane("y-a1", "running", scope=("src/other.py",)),  # other files
        lane("z-a1", "conflict", scope=("src/app.py",), superseded_by="z-a2"),  # relaunched already
        lane("w-a1", "exited", result="LANE-FAILED", scope=("src/app.py",)),  # ended
        lane("unscoped-a1", "running", plan=None, scope=()),  # a lane without a scope owns nothing
    ]
    assert launched(look(plan, others)) == ["t"]
    still_checking = lane("v-a1", "exited", result="OK", scope=("src/",), alive=True)
    assert "lane v-a1" in look(plan, [still_checking]).statuses[0].reason


def test_another_plans_lane_names_its_plan_and_ticket() -> None:
    plan = frozen(ticket("t", scope=("api.py",)))
    theirs = LaneFact(id="u-a1", repo=REPO, state="running", attempt=1, scope=("api.py",), plan="q", ticket="u")
    assert "lane u-a1 (plan q, ticket u) is running and owns api.py" in look(plan, [theirs]).statuses[0].reason


# failures: relaunch, takeover, the lead's hand ----------------------------------------------------------

def test_a_failed_lane_is_relaunched_with_its_findings_then_taken_over() -> None:
    plan = frozen(ticket("a", attempts=2))
    for end in (dict(state="rejected"), dict(state="lost"), dict(state="abandoned"), dict(state="conflict"),
                dict(state="exited", result="LANE-FAILED"), dict(state="stalled", result="LANE-STALLED")):
        decision = look(plan, [lane("a-a1", **end)])  # type: ignore[arg-type]
        assert [(x.ticket, x.after) for x in decision.launches] == [("a", "a-a1")], end
        assert "attempt 2 of 2 with its findings" in decision.launches[0].why
    second = look(plan, [lane("a-a1", "rejected"), lane("a-a2", "running")])
    assert states(second) == {"a": "running"} and second.statuses[0].attempts == 2
    spent = look(plan, [lane("a-a1", "rejected"), lane("a-a2", "exited", result="LANE-FAILED")])
    assert launched(spent) == [] and states(spent) == {"a": "takeover"}
    reason = spent.statuses[0].reason
    assert "a-a2 ended exited LANE-FAILED after 2 attempts (the plan allows 2)" in reason
    assert "lanes-tui recover a-a2 --relaunch" in reason and "lanes-tui plan amend p" in reason


def test_a_lane_still_finishing_is_not_judged_yet() -> None:
    plan = frozen(ticket("a"))
    for fact in (lane("a-a1", "stalled", result="LANE-STALLED", alive=True), lane("a-a1", "exited", result="OK",
                                                                                   alive=True)):
        decision = look(plan, [fact])
        assert launched(decision) == [] and states(decision) == {"a": "running"}


def test_an_exit_without_a_verdict_is_the_leads() -> None:
    decision = look(frozen(ticket("a")), [lane("a-a1", "exited", result="OK")])
    assert launched(decision) == [] and states(decision) == {"a": "takeover"}
    assert "lanes-tui check a-a1" in decision.statuses[0].reason


def test_the_scheduler_follows_the_leads_relaunch_and_an_amend() -> None:
    plan = frozen(ticket("a", attempts=1))
    spent = [lane("a-a1", "exited", result="LANE-FAILED")]
    assert states(look(plan, spent)) == {"a": "takeover"}
    by_hand = lane("a-a2", "running", plan=None)  # `lanes-tui recover a-a1 --relaunch` names no plan
    assert states(look(plan, [*spent, by_hand])) == {"a": "running"}
    ready = lane("a-a2", "ready", plan=None)
    assert states(look(plan, [*spent, ready])) == {"a": "ready"}
    # An amend of the ticket starts its attempts again: lanes before it no longer count.
    amended = {"a": TicketMemo(since=9000.0)}
    decision = look(plan, [*spent, lane("a-a2", "rejected", plan=None)], memos=amended)
    assert [(x.ticket, x.after) for x in decision.launches] == [("a", "a-a2")]


def test_lanes_of_other_plans_and_older_lanes_are_not_the_tickets() -> None:
    plan = frozen(ticket("a"))
    strangers = [
        lane("a-a1", "accepted", plan="other"),  # another plan's ticket `a`
        lane("a-a2", "accepted", plan=None, created=10.0),  # the lead's own lane from before the plan
        LaneFact(id="a-a3", repo=REPO, state="accepted", attempt=3, plan="p", ticket="b"),  # names another ticket
        lane("a-a4", "accepted", repo=OTHER),  # another repository
    ]
    decision = look(plan, strangers)
    assert states(decision) == {"a": "waiting"} and launched(decision) == ["a"]


def test_launch_errors_wait_then_hand_over() -> None:
    plan = frozen(ticket("a", attempts=2))
    retry = {"a": TicketMemo(since=FROZEN_AT, launch_errors=1, last_error="no such provider", retry_at=5010.0)}
    waiting = look(plan, [], memos=retry)
    assert launched(waiting) == [] and states(waiting) == {"a": "waiting"}
    assert "no such provider" in waiting.statuses[0].reason and "10s" in waiting.statuses[0].reason
    assert launched(look(plan, [], memos=retry, now=5011.0)) == ["a"]
    spent = {"a": TicketMemo(since=FROZEN_AT, launch_errors=2, last_error="no such provider")}
    assert states(look(plan, [], memos=spent)) == {"a": "takeover"}


def test_cancel_stops_everything_but_what_was_accepted() -> None:
    plan = frozen(ticket("a"), ticket("b"), ticket("c", "a"))
    decision = look(plan, [lane("a-a1", "accepted"), lane("b-a1", "running")], state="cancelled")
    assert launched(decision) == [] and decision.finished and not decision.done
    assert states(decision) == {"a": "accepted", "b": "cancelled", "c": "cancelled"}


def test_blockers_work_across_repositories() -> None:
    plan = frozen(ticket("api"), ticket("client", "api", repo="../other"))
    waiting = look(plan, [lane("api-a1", "ready")])
    assert states(waiting)["client"] == "blocked"
    go = look(plan, [lane("api-a1", "accepted")])
    assert [(x.ticket, x.repo) for x in go.launches] == [("client", OTHER)]
    assert go.statuses[1].repo == "../other" and go.statuses[0].repo == "."
    running = look(plan, [lane("api-a1", "accepted"), lane("client-a1", "running", repo=OTHER)])
    assert states(running) == {"api": "accepted", "client": "running"}


# rebuilt from disk --------------------------------------------------------------------------------------

def _record(repo: Path, lane_id: str, state: str, *, plan: str | None = "p", result: str | None = None,
            scope: tuple[str, ...] = ()) -> LaneRecord:
    slug = lane_id.rpartition("-a")[0]
    record = LaneRecord(id=lane_id, slug=slug, attempt=int(lane_id.rpartition("-a")[2]), task_type="backend",
                        prompt="say hi", chain=["sim"], repo=str(repo), worktree=str(repo.parent / lane_id),
                        branch=f"lane/{lane_id}", base_sha="0" * 40, target_branch="main", state=state,
                        result=result, scope=list(scope or (f"{slug}.txt",)), plan=plan,
                        ticket=slug if plan else None)
    LaneStore(StatePaths(repo)).create(record)
    return record


def test_a_restarted_scheduler_rebuilds_everything_from_disk(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    store = PlanStore(repo, "p")
    store.freeze(Plan("p", (ticket("a"), ticket("b"), ticket("c", "a", "b", scope=("c.txt",)))),
                 source="plan.toml", who="lead (test)")
    _record(repo, "a-a1", "accepted")
    _record(repo, "b-a1", "rejected")
    _record(repo, "b-a2", "ready")
    _record(repo, "manual-a1", "running", plan=None, scope=("c.txt",))
    decision = plan_decision(repo, "p")
    assert states(decision) == {"a": "accepted", "b": "ready", "c": "blocked"}
    assert [(s.lane, s.attempts) for s in decision.statuses[:2]] == [("a-a1", 1), ("b-a2", 2)]
    LaneStore(StatePaths(repo)).transition(LaneStore(StatePaths(repo)).read("b-a2"), "accepted", "merged")
    waiting = plan_decision(repo, "p")
    assert states(waiting)["c"] == "waiting" and "manual-a1" in waiting.statuses[2].reason
    assert [s.id for s in plan_statuses(repo)] == ["a", "b", "c"]
    log = store.read_log()
    assert [(e["what"], e["who"]) for e in log] == [("launch", "lead (test)")] and "t" in log[0]


def test_nothing_read_from_disk_is_trusted(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    store = PlanStore(repo, "p")
    store.freeze(Plan("p", (ticket("a"),)), source="plan.toml", who="lead")
    # tickets.json speaking of a ticket the plan does not have, with nonsense values: dropped or defaulted
    store.paths.tickets.write_text(json.dumps({"state": "weird", "tickets": {
        "../../etc": {"since": 1}, "a": {"since": "never", "launch_errors": -3, "state": [1], "lane": "../x"}}}))
    record = store.read_record()
    assert record.state == "open" and list(record.tickets) == ["a"]
    assert record.tickets["a"] == TicketMemo(since=store.read_plan().frozen_at)
    # plan.json naming another plan, or an escaping scope, is refused with the fix
    data = json.loads(store.paths.plan.read_text())
    data["plan"]["name"] = "q"
    store.paths.plan.write_text(json.dumps(data))
    with pytest.raises(LanesError, match="names plan 'q'"):
        store.read_plan()
    data["plan"]["name"] = "p"
    data["plan"]["tickets"][0]["scope"] = ["../secret"]
    store.paths.plan.write_text(json.dumps(data))
    with pytest.raises(LanesError, match="escapes the repository"):
        store.read_plan()
    with pytest.raises(LanesError, match="invalid plan name"):
        PlanStore(repo, "../p")


def test_amend_records_the_reason_and_the_diff(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    store = PlanStore(repo, "p")
    store.freeze(Plan("p", (ticket("a"), ticket("b"))), source="plan.toml", who="lead")
    before = store.read_record().tickets["a"].since
    changed = Ticket(id="b", title="ticket b", prompt="say better", scope=("b.txt",))
    with store.tick_lock("lead"):
        diff = store.amend(Plan("p", (ticket("a"), changed)), reason="b needs a better prompt", who="lead (x)",
                           source="plan2.toml")
    assert any(line.startswith("-") and "say b" in line for line in diff)
    assert any(line.startswith("+") and "say better" in line for line in diff)
    record = store.read_record()
    assert record.tickets["a"].since == before and record.tickets["b"].since >= before
    assert store.read_plan().amendment == 1 and store.read_plan().plan.ticket("b").prompt == "say better"
    entry = store.read_log()[-1]
    assert (entry["who"], entry["what"], entry["why"], entry["changed"]) == (
        "lead (x)", "amend", "b needs a better prompt", ["b"])
    assert entry["diff"] == diff
    with pytest.raises(LanesError, match="needs a reason"):
        store.amend(Plan("p", (ticket("a"),)), reason=" ", who="lead", source="x")
