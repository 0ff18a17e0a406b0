"""Many lanes (docs/dashboard.md): sort by attention, `/` filter, seen marks, the same answer for the
same question in several lanes, and "yes, always" for a tool permission prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.app.dashboard.inbox_flows import same_questions
from lanes_tui.widgets import AllowRuleModal, ConfirmModal, InboxPane, LaneFilter, LanesTable
from lanes_tui.widgets._lane_order import attention, ordered
from tests.fake_engine import NOW, FakeEngine, lane


def keys(table: Any) -> list[str]:
    return list(table.row_keys)


def commands(engine: FakeEngine) -> list[tuple[str, Any]]:
    return [c for c in engine.calls if c[0] not in ("start", "output", "aclose")]


def make_app(engine: FakeEngine) -> LanesApp:
    return LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]


MANY = [
    lane("old-done-a1", "accepted", created=NOW - 900),
    lane("runs-a1", "running", created=NOW - 800),
    lane("ready-a1", "ready", created=NOW - 700),
    lane("lost-a1", "lost", created=NOW - 600),
    lane("asks-a1", "waiting", created=NOW - 500),
    lane("bo-b1-a1", "running", created=NOW - 400, group="bo-x"),
    lane("bo-b2-a1", "stalled", created=NOW - 390, group="bo-x"),
    lane("failed-a1", "exited", created=NOW - 300, result="LANE-FAILED"),
    lane("zz-new-a1", "queued", created=NOW - 10),
]


@pytest.fixture()
def engine(tmp_path: Path) -> FakeEngine:
    return FakeEngine(tmp_path, list(MANY))


def test_attention_order_puts_the_lead_first_and_keeps_groups_together() -> None:
    assert [attention(s) for s in MANY] == [4, 3, 2, 1, 0, 3, 0, 1, 3]
    assert [s.id for s in ordered(MANY, "attention")] == [
        "asks-a1", "bo-b2-a1", "bo-b1-a1",  # the group's stalled lane pulls the whole group up
        "lost-a1", "failed-a1", "ready-a1", "runs-a1", "zz-new-a1", "old-done-a1"]
    assert [s.id for s in ordered(MANY, "newest")][:2] == ["zz-new-a1", "failed-a1"]
    assert ordered(MANY, "id")[0].id == "asks-a1"


async def test_o_cycles_the_sort_and_the_title_says_which(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.screen.query_one(LanesTable)
        assert keys(table)[0] == "old-done-a1" and table.border_title == "Lanes"
        await pilot.press("O")
        await pilot.pause()
        assert keys(table)[:3] == ["asks-a1", "bo-b2-a1", "bo-b1-a1"]  # unranked members: most urgent first
        assert table.border_title == "Lanes · by attention"
        await pilot.press("O")
        await pilot.pause()
        assert keys(table)[0] == "zz-new-a1"
        await pilot.press("O", "O")
        await pilot.pause()
        assert keys(table)[0] == "old-done-a1" and table.border_title == "Lanes"


async def test_slash_filters_as_you_type_and_escape_clears(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.screen.query_one(LanesTable)
        await pilot.press("slash")
        await pilot.pause()
        assert isinstance(app.screen, LaneFilter)
        await pilot.press(*"stall")
        await pilot.pause()
        assert keys(table) == ["bo-b2-a1"]
        assert table.border_title == "Lanes · /stall 1 of 9"
        await pilot.press(*(["backspace"] * 5), *"queued run")  # q must not quit; every word must match
        await pilot.pause()
        assert keys(table) == []
        await pilot.press(*(["backspace"] * 10), *"run bo")
        await pilot.pause()
        assert keys(table) == ["bo-b1-a1"]
        await pilot.press("enter")  # keeps the filter, back to the lanes (enter answers nothing)
        await pilot.pause()
        assert not isinstance(app.screen, LaneFilter) and table.has_focus and keys(table) == ["bo-b1-a1"]
        await pilot.press("slash")
        await pilot.pause()
        assert app.screen.query_one("#lane-filter").value == "run bo"
        await pilot.press("escape")
        await pilot.pause()
        assert table.has_focus and len(keys(table)) == len(MANY) and table.border_title == "Lanes"
    assert commands(engine) == []


async def test_a_lane_whose_state_changed_is_marked_until_selected(tmp_path: Path) -> None:
    engine = FakeEngine(tmp_path, [s for s in MANY if not s.group])  # no group brackets: the ids as they are
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.screen.query_one(LanesTable)
        assert table.unseen == []
        assert str(table.get_cell("ready-a1", "id")) == "ready-a1"
        await pilot.pause()  # the bridge listens from here on
        engine.change_lane("zz-new-a1", state="running")  # queued → running: not news
        engine.change_lane("runs-a1", state="waiting", state_reason="a question is open")
        await pilot.pause(0.1)
        assert table.unseen == ["runs-a1"]
        assert str(table.get_cell("runs-a1", "id")) == "• runs-a1"
        assert str(table.get_cell("ready-a1", "id")) == "  ready-a1"  # aligned while any mark shows
        table.move_cursor(row=table.get_row_index("runs-a1"))
        await pilot.pause()
        assert table.unseen == []
        assert str(table.get_cell("runs-a1", "id")) == "runs-a1"


def _ask_everywhere(engine: FakeEngine, lanes: list[str], title: str) -> list[str]:
    return [engine.inbox.ask(lane_id, kind="yesno", title=title).id for lane_id in lanes]


def test_same_questions_are_the_open_ones_with_the_same_kind_text_and_options(engine: FakeEngine) -> None:
    first, second = _ask_everywhere(engine, ["runs-a1", "asks-a1"], "Run the  migrations?")
    engine.inbox.ask("ready-a1", kind="yesno", title="run the migrations?", body="with seeds")
    engine.inbox.ask("lost-a1", kind="text", title="Run the migrations?")
    third = engine.inbox.ask("failed-a1", kind="yesno", title="RUN the migrations? ").id
    questions = engine.questions()
    chosen = next(q for q in questions if q.question.id == first)
    assert [q.question.id for q in same_questions(chosen, questions)] == [second, third]


async def test_answering_one_offers_the_same_answer_to_the_same_questions(engine: FakeEngine) -> None:
    ids = _ask_everywhere(engine, ["runs-a1", "asks-a1", "ready-a1"], "Run the migrations?")
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("y")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        assert app.screen.title_text == "Answer all 3 the same?"
        await pilot.press("y")
        await pilot.pause()
        await pilot.pause()
    assert commands(engine) == [("answer", (qid, "yes")) for qid in ids]


async def test_n_in_the_offer_leaves_the_others_open(engine: FakeEngine) -> None:
    ids = _ask_everywhere(engine, ["runs-a1", "asks-a1"], "Run the migrations?")
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("n")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")
        await pilot.pause()
    assert commands(engine) == [("answer", (ids[0], "no"))]
    assert engine.inbox.get(ids[1]).state == "open"


async def test_yes_always_allows_by_the_pattern_the_lead_edits(engine: FakeEngine) -> None:
    question = engine.inbox.ask("runs-a1", kind="permission", title="Allow Bash: pytest -q", source="claude-stdio",
                                correlation={"request_id": "r1", "tool_name": "Bash", "subject": "pytest -q"})
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("Y")
        await pilot.pause()
        assert isinstance(app.screen, AllowRuleModal)
        assert app.screen.query_one("#pattern").value == "pytest -q"
        await pilot.press("backspace", "backspace", "*", "enter")
        await pilot.pause()
        await pilot.pause()
    assert commands(engine) == [("allow_always", (question.id, "pytest *"))]
    assert any("Bash matching 'pytest *'" in n.message for n in app._notifications)


async def test_yes_always_refuses_a_question_that_is_not_a_tool_prompt(engine: FakeEngine) -> None:
    engine.inbox.ask("runs-a1", kind="yesno", title="Deploy?")
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("Y")
        await pilot.pause()
        assert not isinstance(app.screen, AllowRuleModal)
    assert commands(engine) == []
    assert any("permission prompt" in n.message for n in app._notifications)


async def test_a_question_answered_by_rule_shows_while_its_lane_runs(engine: FakeEngine) -> None:
    question = engine.inbox.ask("runs-a1", kind="permission", title="Allow Bash: pytest tests",
                                source="claude-stdio", correlation={"request_id": "r2", "tool_name": "Bash"})
    engine.inbox.answer(question.id, "yes", by="rule")
    engine.inbox.deliver(question.id)
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        inbox = app.screen.query_one(InboxPane)
        assert str(inbox.get_cell(question.id, "state")) == "by rule"
        await pilot.pause()
        engine.change_lane("runs-a1", state="ready")
        await pilot.pause(0.1)
        assert inbox.row_count == 0
    path = engine.repo / "inbox" / "runs-a1" / f"{question.id}.answer.json"
    assert json.loads(path.read_text())["by"] == "rule"
