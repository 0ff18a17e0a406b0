"""The second opinion in the dashboard: accepting over a blocking review with a reason, and a best-of group's
winner accepted with the rest abandoned. The real App and screen, a fake engine that records each call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Input, Static

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.engine.decisions.accept import AcceptOutcome
from lanes_tui.engine.decisions.accept_plan import AcceptPlan
from lanes_tui.engine.decisions.results import ReviewVerdict, Verification
from lanes_tui.widgets import AcceptModal, ConfirmModal, LanesTable, ReasonModal
from tests.fake_engine import FakeEngine, lane

BLOCKING = {"verdict": "BLOCKING", "reviewer": "sim-reviewer", "family": "sim-review", "reason": "REVIEW: BLOCKING",
            "tail": "", "diff_digest": "d" * 16, "started": 1.0, "ended": 2.0,
            "findings": [{"path": "divide.py", "line": 1, "text": "added line is marked BUG/FIXME: # FIXME"}]}
REVIEW_REFUSAL = "the review is BLOCKING (sim-reviewer: 1 finding); fix it or accept with --override-review REASON"


class ReviewEngine(FakeEngine):
    """A fake engine whose lanes named `blocked-*` carry a BLOCKING review, and whose accept takes
    `override_review` (the reason is what the lead typed; an empty one is refused as the engine does)."""

    async def plan_accept(self, lane_id: str, override: str | None = None,
                          override_review: str | None = None) -> AcceptPlan:
        plan = await super().plan_accept(lane_id, override)
        plan.gates = [{"command": "python -m unittest -q", "status": "passed", "exit_code": 0, "duration_s": 1.5}]
        if lane_id.startswith("blocked-"):
            plan.refusals = [r for r in plan.refusals if "not ready" not in r]
            plan.review_detail, plan.review_refusals = dict(BLOCKING), [REVIEW_REFUSAL]
            if override_review is None:
                plan.refusals.append(REVIEW_REFUSAL)
        return plan

    async def accept(self, lane_id: str, *, message: str | None = None, override: str | None = None,
                     override_review: str | None = None) -> AcceptOutcome:
        self.calls.append(("accept", (lane_id, override_review)))
        self.change_lane(lane_id, state="accepted")
        return AcceptOutcome(lane_id, "accepted", f"accepted {lane_id} into programme at cafe000000")


    async def review(self, lane_id: str) -> ReviewVerdict:
        self.calls.append(("review", lane_id))
        return ReviewVerdict.from_json(dict(BLOCKING), lane=lane_id)

    async def verify(self, lane_id: str, evidence: str) -> Verification:
        self.calls.append(("verify", (lane_id, evidence)))
        return Verification("ana", 1.0, evidence, "d" * 16)


GROUP = "bo-parse-1a2b3c"


def make(tmp_path: Path, *lanes: Any) -> tuple[ReviewEngine, LanesApp]:
    engine = ReviewEngine(tmp_path / "x", list(lanes))
    return engine, LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]


def calls(engine: FakeEngine, *names: str) -> list[tuple[str, Any]]:
    return [c for c in engine.calls if c[0] in names]


async def select(app: LanesApp, lane_id: str) -> None:
    table = app.screen.query_one(LanesTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(lane_id))


async def test_a_blocking_review_is_accepted_over_only_with_a_reason(tmp_path: Path) -> None:
    engine, app = make(tmp_path, lane("blocked-a1", "rejected", review="BLOCKING"))
    async with app.run_test(size=(120, 36)) as pilot:
        await select(app, "blocked-a1")
        await pilot.press("a")
        await pilot.pause(0.2)
        modal = app.screen
        assert isinstance(modal, AcceptModal) and modal.review_override and not modal.refused
        assert modal.review == "BLOCKING" and modal.query_one("#override-note", Static)
        texts = [str(w.render()) for w in modal.query(".line").results(Static)]
        assert "✓ python -m unittest -q — passed, 1.5s" in texts
        assert texts[texts.index("gates: passed") + 1].startswith("✓ python")  # each step under its gates line
        assert any(t.startswith("review: BLOCKING by sim-reviewer") for t in texts)
        await pilot.press("y")
        await pilot.pause(0.2)
        assert isinstance(app.screen, ReasonModal)
        await pilot.press("enter")  # an empty reason is refused in place
        await pilot.pause()
        assert isinstance(app.screen, ReasonModal)
        assert "type your reason" in str(app.screen.query_one("#reason-error", Static).render())
        await pilot.press("escape")  # no reason: nothing is accepted
        await pilot.pause(0.2)
        assert calls(engine, "accept") == []

        await pilot.press("a")
        await pilot.pause(0.2)
        await pilot.press("y")
        await pilot.pause(0.2)
        app.screen.query_one("#reason", Input).value = "the FIXME is the ticket's own follow-up"
        await pilot.press("enter")
        await pilot.pause(0.3)
    assert calls(engine, "accept") == [("accept", ("blocked-a1", "the FIXME is the ticket's own follow-up"))]


async def test_a_blocking_review_with_another_refusal_cannot_be_overridden_here(tmp_path: Path) -> None:
    engine, app = make(tmp_path, lane("blocked-a1", "rejected", review="BLOCKING"))
    engine.refusals["blocked-a1"] = ["the worktree changed since its check; run `lanes-tui check blocked-a1` first"]
    async with app.run_test(size=(120, 36)) as pilot:
        await select(app, "blocked-a1")
        await pilot.press("a")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, AcceptModal)  # refused outright, as before: the notification says why
    assert calls(engine, "accept") == []
    assert any("worktree changed" in n.message for n in app._notifications)


async def test_accepting_a_best_of_winner_offers_to_abandon_the_rest(tmp_path: Path) -> None:
    engine, app = make(
        tmp_path,
        lane("parse-b1-a1", "ready", group=GROUP, rank=1, review="CLEAN"),
        lane("parse-b2-a1", "ready", group=GROUP, rank=2, review="MISSING"),
        lane("parse-b3-a1", "rejected", group=GROUP, rank=3),
        lane("other-a1", "ready"),
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await select(app, "parse-b1-a1")
        await pilot.press("a")
        await pilot.pause(0.2)
        await pilot.press("y")
        await pilot.pause(0.3)
        offer = app.screen
        assert isinstance(offer, ConfirmModal) and not isinstance(offer, AcceptModal)
        assert offer.lines[1:3] == ["  #2 parse-b2-a1 (ready): /tmp/wt/parse-b2-a1",
                                    "  #3 parse-b3-a1 (rejected): /tmp/wt/parse-b3-a1"]
        assert "other-a1" not in "\n".join(offer.lines)
        await pilot.press("y")
        await pilot.pause(0.3)
    assert calls(engine, "accept", "abandon") == [("accept", ("parse-b1-a1", None)), ("abandon", "parse-b2-a1"),
                                                  ("abandon", "parse-b3-a1")]
    assert any("abandoned parse-b2-a1, parse-b3-a1" in n.message for n in app._notifications)


async def test_the_rest_of_a_group_stays_when_the_lead_says_no(tmp_path: Path) -> None:
    engine, app = make(tmp_path, lane("parse-b1-a1", "ready", group=GROUP, rank=1),
                       lane("parse-b2-a1", "ready", group=GROUP, rank=2),
                       lane("parse-b3-a1", "abandoned", group=GROUP, rank=3))
    async with app.run_test(size=(120, 36)) as pilot:
        await select(app, "parse-b2-a1")  # the lead may keep the runner-up: any member can be accepted
        await pilot.press("a")
        await pilot.pause(0.2)
        await pilot.press("y")
        await pilot.pause(0.3)
        assert isinstance(app.screen, ConfirmModal)
        assert [line for line in app.screen.lines if line.startswith("  #")] == [
            "  #1 parse-b1-a1 (ready): /tmp/wt/parse-b1-a1"]  # the abandoned one is not offered again
        await pilot.press("n")
        await pilot.pause(0.2)
    assert calls(engine, "accept", "abandon") == [("accept", ("parse-b2-a1", None))]


async def test_a_lone_lane_is_accepted_without_an_offer(tmp_path: Path) -> None:
    engine, app = make(tmp_path, lane("ready-a1", "ready", review="CLEAN"))
    async with app.run_test(size=(120, 36)) as pilot:
        await select(app, "ready-a1")
        await pilot.press("a")
        await pilot.pause(0.2)
        await pilot.press("y")
        await pilot.pause(0.3)
        assert not isinstance(app.screen, ConfirmModal)
    assert calls(engine, "accept", "abandon") == [("accept", ("ready-a1", None))]


async def test_review_again_and_verify_from_the_keyboard(tmp_path: Path) -> None:
    engine, app = make(tmp_path, lane("blocked-a1", "rejected", review="BLOCKING"))
    async with app.run_test(size=(120, 36)) as pilot:
        await select(app, "blocked-a1")
        await pilot.press("R")
        await pilot.pause(0.2)
        await pilot.press("v")
        await pilot.pause(0.2)
        assert isinstance(app.screen, ReasonModal) and app.screen.placeholder == "your evidence"
        await pilot.press(*"div by zero raises", "enter")
        await pilot.pause(0.2)
    assert calls(engine, "review", "verify") == [("review", "blocked-a1"),
                                                 ("verify", ("blocked-a1", "div by zero raises"))]
    shown = [f"{n.title}: {n.message}" for n in app._notifications]
    assert "Review: blocked-a1: review BLOCKING by sim-reviewer, 1 finding" in shown
    assert "Verified: blocked-a1: verified by ana: div by zero raises" in shown
