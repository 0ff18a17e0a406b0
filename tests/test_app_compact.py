"""The dashboard on every terminal (issue 32): the layout by size, switched live on resize with nothing
lost; the attention bar naming the oldest open question; ages ticking on the screen's clock; relaunched
lanes out of the counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.geometry import Size
from textual.pilot import Pilot
from textual.widgets import Footer, Static, TabbedContent

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.app.dashboard.compact import layout_for
from lanes_tui.widgets import AttentionBar, InboxPane, LanesTable, StallsPane
from tests.fake_engine import NOW, FakeEngine, lane


def make_app(engine: FakeEngine) -> LanesApp:
    return LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]


@pytest.fixture()
def engine(tmp_path: Path) -> FakeEngine:
    engine = FakeEngine(tmp_path, [
        lane("ready-a1", "ready", created=NOW - 300),
        lane("question-a1", "waiting", created=NOW - 200, state_reason="a question is open in the inbox"),
        lane("stall-a1", "stalled", created=NOW - 100, stall={"idle_s": 900.0}),
        lane("busy-a1", "running", created=NOW - 50),
    ])
    engine.inbox.ask("question-a1", kind="yesno", title="Deploy the calculator to staging?")
    return engine


def bar_text(app: LanesApp) -> str:
    return str(app.screen.query_one(AttentionBar).render())


def shown(app: LanesApp, selector: str) -> bool:
    """On screen: displayed, with every ancestor displayed, and given rows to draw in."""
    widget = app.screen.query_one(selector)
    return widget.display and all(a.display for a in widget.ancestors if hasattr(a, "display")) \
        and widget.region.height > 0


def test_the_layout_by_size() -> None:
    assert [layout_for(Size(w, h)) for w, h in [(80, 24), (100, 30), (119, 40), (160, 31)]] == ["compact"] * 4
    assert [layout_for(Size(w, h)) for w, h in [(120, 32), (160, 48)]] == ["wide"] * 2
    assert [layout_for(Size(w, h)) for w, h in [(59, 40), (100, 17), (40, 10)]] == ["tiny"] * 3


async def test_at_80x24_the_question_is_named_and_the_side_panes_are_tabs(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen.has_class("-compact")
        # The bar names the oldest open question, the lane it blocks and its age.
        text = bar_text(app)
        assert text.startswith("question-a1 waits ") and "Deploy the calculator to staging?" in text
        assert app.screen.query_one(LanesTable).shown_columns == ["id", "state", "why"]
        assert app.screen.query_one(Footer).compact
        in_footer = {found.binding.id for found in screen.active_bindings.values() if found.binding.show}
        assert {"help", "quit", "answer_yes", "accept"} <= in_footer and "start" not in in_footer
        assert shown(app, "#output") and not shown(app, "#inbox")
        tabs = screen.query_one("#detail", TabbedContent)
        tabs.active = "tab-inbox"
        await pilot.pause()
        assert shown(app, "#inbox") and not shown(app, "#stalls") and not shown(app, "#output")
        inbox = screen.query_one(InboxPane)
        assert inbox.region.width >= 78 and inbox.region.height >= 8  # the bottom's rows, full width
        assert inbox.row_keys == [q.question.id for q in engine.questions()]
        assert inbox.shown_columns == ["lane", "title", "age", "state"]
        tabs.active = "tab-stalls"
        await pilot.pause()
        assert shown(app, "#stalls") and not shown(app, "#inbox")
        assert screen.query_one(StallsPane).row_keys == ["stall-a1"]


async def test_at_160x48_the_side_panes_have_their_column(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert not app.screen.has_class("-compact")
        assert all(shown(app, pane) for pane in ("#output", "#inbox", "#stalls", "#meters"))
        assert app.screen.query_one(InboxPane).region.height >= 5
        assert app.screen.query_one(LanesTable).shown_columns == [key for key, _ in LanesTable.COLUMNS]
        assert app.screen.query_one(InboxPane).shown_columns == [key for key, _ in InboxPane.COLUMNS]
        assert "start" in {found.binding.id for found in app.screen.active_bindings.values() if found.binding.show}
        assert "question-a1 waits " in bar_text(app)  # named in every layout
        tabs = app.screen.query_one("#detail", TabbedContent)
        assert all(tabs.get_tab(tab).has_class("-hidden") for tab in ("tab-inbox", "tab-stalls", "tab-meters"))


async def _resize(pilot: Pilot[None], width: int, height: int) -> None:
    await pilot.resize_terminal(width, height)
    await pilot.pause()
    await pilot.pause()


async def test_the_layout_switches_live_and_keeps_the_selection_and_the_focus(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        dashboard = app.screen
        table = dashboard.query_one(LanesTable)
        table.move_cursor(row=table.get_row_index("stall-a1"))
        await pilot.pause()
        assert app.bridge.selected_lane == "stall-a1"

        await _resize(pilot, 100, 30)
        assert app.screen.has_class("-compact") and table.selected_lane == "stall-a1"
        assert table.shown_columns == list(LanesTable.MEDIUM_COLUMNS)
        assert app.screen.focused is table

        await _resize(pilot, 50, 15)  # too small: the notice, and the app keeps running
        notice = app.screen.query_one("#size-notice", Static)
        assert shown(app, "#size-notice") and not shown(app, "#lanes")
        assert "at least 60×18" in str(notice.render()) and "50×15" in str(notice.render())
        await pilot.press("x")  # behind the notice the keys do nothing: no dialog opens
        await pilot.pause()
        assert app.screen is dashboard and not [c for c in engine.calls if c[0] == "plan_abandon"]

        await _resize(pilot, 160, 48)  # back: as it was
        assert not app.screen.has_class("-tiny") and not app.screen.has_class("-compact")
        assert shown(app, "#lanes") and shown(app, "#inbox")
        assert table.selected_lane == "stall-a1" and app.bridge.selected_lane == "stall-a1"
        assert app.screen.focused is table


async def test_a_focused_side_pane_brings_up_its_tab_when_the_terminal_narrows(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        inbox = app.screen.query_one(InboxPane)
        inbox.focus()
        await pilot.pause()
        await _resize(pilot, 80, 24)
        assert app.screen.query_one("#detail", TabbedContent).active == "tab-inbox"
        assert shown(app, "#inbox") and app.screen.focused is inbox
        await _resize(pilot, 160, 48)  # wide again: the Output tab, the Inbox in its column
        assert app.screen.query_one("#detail", TabbedContent).active == "tab-output"
        assert shown(app, "#inbox") and shown(app, "#output")


async def test_ages_tick_on_the_screens_clock(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen: Any = app.screen
        asked = engine.questions()[0].question.created
        screen.tick_ages(asked + 7)
        assert "question-a1 waits 7s:" in bar_text(app)
        inbox = screen.query_one(InboxPane)
        assert inbox.get_cell(engine.questions()[0].question.id, "age").plain == "7s"
        screen.tick_ages(asked + 8)
        assert "question-a1 waits 8s:" in bar_text(app)
        assert inbox.get_cell(engine.questions()[0].question.id, "age").plain == "8s"
        assert screen.age_timer is not None and screen.tick_every_s == 1.0  # the one interval that moves them


async def test_a_relaunched_lane_leaves_the_counts_and_sorts_last(tmp_path: Path) -> None:
    engine = FakeEngine(tmp_path, [
        lane("stall-a1", "stalled", created=NOW - 300, superseded_by="stall-a2", stall={"idle_s": 900.0}),
        lane("stall-a2", "running", created=NOW - 100),
        lane("ready-a1", "ready", created=NOW - 50),
    ])
    app = make_app(engine)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.screen.query_one(AttentionBar).counts == (0, 0, 1, 0)
        assert "!0" in app.title and "0 stalls" in bar_text(app)
        assert app.screen.query_one(StallsPane).row_keys == []
        await pilot.press("O")  # by attention
        await pilot.pause()
        assert app.screen.query_one(LanesTable).row_keys == ["ready-a1", "stall-a2", "stall-a1"]


async def test_a_resize_under_a_dialog_is_taken_when_it_closes(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        dashboard = app.screen
        await pilot.press("question_mark")  # the help dialog covers the dashboard
        await pilot.pause()
        assert app.screen is not dashboard
        await _resize(pilot, 80, 24)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is dashboard and dashboard.has_class("-compact")
        assert dashboard.query_one(LanesTable).shown_columns == ["id", "state", "why"]


async def test_keys_6_to_8_reach_the_side_panes_in_either_layout(engine: FakeEngine) -> None:
    """Every tab has a key: while compact, 6, 7 and 8 bring up the Inbox, Stalls and Meters tabs (the
    focus in the list panes); while wide, the same keys put the focus in the pane's own column."""
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        tabs = app.screen.query_one("#detail", TabbedContent)
        for key, tab, pane in (("6", "tab-inbox", "#inbox"), ("7", "tab-stalls", "#stalls"),
                               ("8", "tab-meters", "#meters")):
            await pilot.press(key)
            await pilot.pause()
            assert tabs.active == tab and shown(app, pane), key
            if pane != "#meters":  # the Meters pane has nothing to focus: it is read, not moved in
                assert app.screen.focused is app.screen.query_one(pane), key
        await pilot.press("1")
        await pilot.pause()
        assert tabs.active == "tab-output" and shown(app, "#output") and not shown(app, "#meters")
        await _resize(pilot, 160, 48)
        await pilot.press("7")
        await pilot.pause()
        assert app.screen.focused is app.screen.query_one(StallsPane) and tabs.active == "tab-output"
