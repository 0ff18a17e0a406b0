"""The list panes (lanes, inbox, stalls, worktrees), each mounted alone in a small host app and fed by hand."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.message import Message

from lanes_tui.engine.state.samples import parse_sample
from lanes_tui.widgets import InboxPane, LanesTable, StallsPane, WorktreesPane
from tests.snapshot_apps.widget_apps import BEST_OF, LANES, NOW, QUESTIONS, WORKTREES, WidgetHost, lane


def keys(table: Any) -> list[str]:
    """Row keys in display order."""
    return list(table.row_keys)


def unique(messages: list[Message]) -> list[Message]:
    """The hook sees a message once per node it bubbles through; keep its first sighting."""
    seen: set[int] = set()
    first: list[Message] = []
    for message in messages:
        if id(message) not in seen:
            seen.add(id(message))
            first.append(message)
    return first


def style_of(table: Any, row: str, column: str) -> Style:
    """The style a cell's text was given (its first span)."""
    style = table.get_cell(row, column).spans[0].style
    assert isinstance(style, Style)
    return style


def plain(table: Any, row: str, column: str) -> str:
    cell = table.get_cell(row, column)
    return cell.plain if isinstance(cell, Text) else str(cell)


# --- LanesTable ------------------------------------------------------------------------------------


async def test_lanes_sync_adds_updates_and_removes_without_clearing() -> None:
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 36)) as pilot:
        table.sync(LANES[:3], NOW)
        await pilot.pause()
        assert keys(table) == ["fix-login-a1", "add-cache-a1", "slow-docs-a1"]
        assert table.cell_updates == 0
        kept = {key: table.get_row(key) for key in keys(table)}
        refreshed: list[tuple[Any, ...]] = []
        real_refresh = table.refresh

        def spy_refresh(*regions: Any, **kwargs: Any) -> Any:
            refreshed.append(regions)
            return real_refresh(*regions, **kwargs)

        table.refresh = spy_refresh  # type: ignore[method-assign]
        changed = [LANES[0], dataclasses.replace(LANES[1], state="running", state_reason="the question was answered"),
                   LANES[2]]
        table.sync(changed, NOW)
        await pilot.pause()
        assert keys(table) == ["fix-login-a1", "add-cache-a1", "slow-docs-a1"]
        assert plain(table, "add-cache-a1", "state") == "running"
        assert table.cell_updates == 2  # the state and the why: nothing else
        assert [table.get_row(key) for key in ("fix-login-a1", "slow-docs-a1")] == \
            [kept["fix-login-a1"], kept["slow-docs-a1"]]
        assert len(refreshed) == 1 and len(refreshed[0]) == 1 and refreshed[0][0].y == 2  # its row's line only
        table.sync(changed, NOW)
        assert table.cell_updates == 2 and len(refreshed) == 1  # the same data changes nothing

        table.sync([changed[2], LANES[3]], NOW)
        await pilot.pause()
        assert keys(table) == ["slow-docs-a1", "tidy-tests-a2"]
        assert plain(table, "tidy-tests-a2", "id") == "tidy-tests-a2"


async def test_lanes_cursor_stays_on_its_lane_when_others_move_or_go() -> None:
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 36)) as pilot:
        table.sync(LANES, NOW)
        await pilot.pause()
        table.focus()
        await pilot.press("down", "down", "down")
        await pilot.pause()
        assert table.selected_lane == "tidy-tests-a2"
        reordered = [LANES[6], LANES[3], LANES[0]]  # two above it gone, one moved in front
        table.sync(reordered, NOW + 5)
        await pilot.pause()
        assert keys(table) == ["quiet-one-a1", "tidy-tests-a2", "fix-login-a1"]
        assert table.selected_lane == "tidy-tests-a2"
        assert [m.lane_id for m in app.messages] == ["fix-login-a1", "add-cache-a1", "slow-docs-a1", "tidy-tests-a2"]


async def test_lane_selected_messages_in_order_and_none_when_empty() -> None:
    seen: list[Message] = []
    table = LanesTable()
    app = WidgetHost(table, lambda t: t.sync(LANES[:2], NOW))
    async with app.run_test(size=(120, 36), message_hook=seen.append) as pilot:
        await pilot.pause()
        table.focus()
        await pilot.press("down", "up")
        table.sync([], NOW)
        await pilot.pause()
    selected = [m.lane_id for m in unique(seen) if isinstance(m, LanesTable.LaneSelected)]
    assert selected == ["fix-login-a1", "add-cache-a1", "fix-login-a1", None]


async def test_lanes_cells_meters_and_state_colours() -> None:
    table = LanesTable()
    app = WidgetHost(table, lambda t: t.sync(LANES, NOW))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert plain(table, "fix-login-a1", "provider") == "claude:sonnet"
        assert plain(table, "tidy-tests-a2", "cost") == "~$1.50"
        assert plain(table, "fix-login-a1", "elapsed") == "10m"
        assert plain(table, "slow-docs-a1", "idle") == ""  # not live: no meters
        error = Color.parse(app.theme_variables["error"]).rich_color
        warning = Color.parse(app.theme_variables["warning"]).rich_color
        assert style_of(table, "slow-docs-a1", "state").color == error
        assert style_of(table, "add-cache-a1", "state").color == warning
        assert style_of(table, "old-work-a1", "state").dim

        before = table.cell_updates
        table.update_meters("fix-login-a1", parse_sample({"idle_s": 75, "cpu_percent": 99.4, "rss_bytes": 2 * 1024**3}))
        assert table.cell_updates == before + 3
        assert [plain(table, "fix-login-a1", c) for c in ("idle", "cpu", "rss")] == ["1m15s", "99", "2.0G"]
        table.update_meters("no-such-lane", parse_sample({"idle_s": 1}))  # ignored, no error
        table.sync([lane("x-a1", "running", task="[bold]x[/]", state_reason="[red]")], NOW)
        await pilot.pause()
        assert plain(table, "x-a1", "task") == "[bold]x[/]"  # agent text is never markup


async def test_lanes_review_column_marks_each_verdict_in_its_tone() -> None:
    verdicts = {"fix-login-a1": "CLEAN", "add-cache-a1": "BLOCKING", "slow-docs-a1": "MISSING"}
    lanes = [dataclasses.replace(s, review=verdicts.get(s.id)) for s in LANES]
    table = LanesTable()
    app = WidgetHost(table, lambda t: t.sync(lanes, NOW))
    async with app.run_test(size=(160, 36)) as pilot:
        await pilot.pause()
        assert [plain(table, lane_id, "review") for lane_id in (*verdicts, "tidy-tests-a2")] == ["✓", "✗", "?", ""]
        for lane_id, tone in zip(verdicts, ("success", "error", "warning"), strict=True):
            assert style_of(table, lane_id, "review").color == Color.parse(app.theme_variables[tone]).rich_color
        table.focus()
        await pilot.press("down")
        await pilot.pause()
        assert str(table.tooltip).endswith("\nreview: BLOCKING")  # the tooltip spells the mark out


async def test_lanes_best_of_group_is_shown_together_best_first() -> None:
    winner, runner_up, last = BEST_OF
    unranked = [dataclasses.replace(s, rank=None) for s in BEST_OF]
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(160, 36)) as pilot:
        # The group's lanes come apart and out of order; they are shown where its first lane is.
        table.sync([LANES[0], unranked[2], LANES[1], unranked[0], unranked[1]], NOW)
        await pilot.pause()
        assert keys(table) == ["fix-login-a1", "parse-csv-b3-a1", "parse-csv-b1-a1", "parse-csv-b2-a1",
                               "add-cache-a1"]
        assert [plain(table, k, "id") for k in keys(table)] == [
            "  fix-login-a1", "┬ parse-csv-b3-a1", "├ parse-csv-b1-a1", "└ parse-csv-b2-a1", "  add-cache-a1"]
        table.move_cursor(row=1)
        await pilot.pause()
        assert "best-of group bo-parse-csv-1a2b3c: not ranked until every lane of it has ended" in str(table.tooltip)

        table.sync([LANES[0], last, LANES[1], winner, runner_up], NOW)  # ranked: best first, the cursor follows
        await pilot.pause()
        assert keys(table)[1:4] == ["parse-csv-b1-a1", "parse-csv-b2-a1", "parse-csv-b3-a1"]
        assert [plain(table, k, "id") for k in keys(table)[1:4]] == [
            "┬ parse-csv-b1-a1 #1", "├ parse-csv-b2-a1 #2", "└ parse-csv-b3-a1 #3"]
        assert style_of(table, "parse-csv-b1-a1", "id").bold
        assert table.selected_lane == "parse-csv-b3-a1"
        assert "rank 3 of 3" in str(table.tooltip)

        table.sync([LANES[0], winner], NOW)  # the rest abandoned and gone: a group of one, no bracket to draw
        await pilot.pause()
        assert [plain(table, k, "id") for k in keys(table)] == ["  fix-login-a1", "─ parse-csv-b1-a1 #1"]
        table.sync(LANES[:2], NOW)  # no group at all: no marks, no padding
        await pilot.pause()
        assert [plain(table, k, "id") for k in keys(table)] == ["fix-login-a1", "add-cache-a1"]


async def test_a_long_lane_id_is_ellipsised_and_does_not_widen_the_column() -> None:
    """Issue 32: one long id (here a hand-given 58-character slug) widened the lane column for every
    row; it is cut with `…` (its attempt kept), while the cursor, the selection and the tooltip keep it whole."""
    long_id = "migrate-the-billing-service-to-the-new-payments-provider-a1"
    table = LanesTable()
    app = WidgetHost(table, lambda t: t.sync([LANES[0], lane(long_id, "running")], NOW))
    async with app.run_test(size=(160, 36)) as pilot:
        await pilot.pause()
        assert plain(table, "fix-login-a1", "id") == "fix-login-a1"
        shown = plain(table, long_id, "id")
        assert shown == "migrate-the-billing…-a1" and len(shown) <= 28
        header = table.render_line(0).text
        assert header.index("task") <= 28 + 3, header  # the id column: at most 28 wide, plus its padding
        table.focus()
        table.move_cursor(row=table.get_row_index(long_id))
        await pilot.pause()
        assert table.selected_lane == long_id
        assert str(table.tooltip).splitlines()[0] == long_id


def screen_text(app: Any) -> str:
    """Every character on the screen, as the SVG screenshot writes them (spaces as spaces)."""
    import html
    import re

    return html.unescape("".join(re.findall(r">([^<>]*)</text>", app.export_screenshot()))).replace("\xa0", " ")


EIGHTHS = set("▉▊▋▌▍▎▏▁▂▃▄▅▆▇")
"""The scrollbars' thumb ends in Textual's own renderer."""


async def test_the_list_panes_draw_no_stray_scrollbar_glyphs() -> None:
    """Issue 32: the panes' horizontal scrollbars showed as stray `▍▋▎▉` glyphs under the tables. A
    table wider than its pane has its scrollbar, drawn in whole cells; one with room for no row above a
    scrollbar gets none, so its one row is readable."""
    table = LanesTable()
    app = WidgetHost(table, lambda t: t.sync([*LANES, *(lane(f"more-{i}-a1", "running") for i in range(9))], NOW))
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        for x, y in ((0, 0), (7, 3), (23, 5)):  # thumb positions that fall between cells
            table.scroll_to(x=x, y=y, animate=False)
            await pilot.pause()
            assert table.show_horizontal_scrollbar and table.show_vertical_scrollbar
            assert not EIGHTHS & set(screen_text(app)), (x, y)

    inbox = InboxPane()
    app = WidgetHost(inbox, lambda w: w.sync(QUESTIONS[:1], NOW))
    async with app.run_test(size=(32, 12)) as pilot:  # narrower than the question's title
        inbox.styles.height = 4  # its border, the header and one line: the 1-row gap of a crowded side column
        await pilot.pause()
        assert not inbox.show_horizontal_scrollbar
        assert QUESTIONS[0].question.lane in screen_text(app) and not EIGHTHS & set(screen_text(app))
        inbox.styles.height = 5  # a line more: a row and the scrollbar under it
        await pilot.pause()
        assert inbox.show_horizontal_scrollbar and QUESTIONS[0].question.lane in screen_text(app)


async def test_lanes_recolour_on_theme_change() -> None:
    table = LanesTable()
    app = WidgetHost(table, lambda t: t.sync(LANES, NOW))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.theme = "textual-light"
        await pilot.pause()
        error = Color.parse(app.theme_variables["error"]).rich_color
        assert style_of(table, "slow-docs-a1", "state").color == error


# --- InboxPane -------------------------------------------------------------------------------------


async def test_inbox_hides_finished_questions_marks_orphans_oldest_first() -> None:
    seen: list[Message] = []
    pane = InboxPane()
    app = WidgetHost(pane, lambda p: p.sync(QUESTIONS, NOW))
    async with app.run_test(size=(120, 36), message_hook=seen.append) as pilot:
        await pilot.pause()
        assert keys(pane) == ["q_000000000001", "q_000000000002", "q_000000000003"]
        assert plain(pane, "q_000000000001", "state") == "orphaned"
        error = Color.parse(app.theme_variables["error"]).rich_color
        assert style_of(pane, "q_000000000001", "state").color == error
        assert plain(pane, "q_000000000003", "age") == "30s"
        assert pane.open_count == 2
        selected = pane.selected_question
        assert selected is not None and selected.question.id == "q_000000000001"
        pane.focus()
        await pilot.press("down")
        await pilot.pause()
        selected = pane.selected_question
        assert selected is not None and selected.question.title == "Which login flow?"
        answered = [dataclasses.replace(q, state="delivered") if q.question.id == "q_000000000002" else q
                    for q in QUESTIONS]
        pane.sync(answered, NOW + 60)
        await pilot.pause()
        assert keys(pane) == ["q_000000000001", "q_000000000003"]
    chosen = [m.qid for m in unique(seen) if isinstance(m, InboxPane.QuestionSelected)]
    assert chosen[:2] == ["q_000000000001", "q_000000000002"]


# --- StallsPane ------------------------------------------------------------------------------------


async def test_stalls_lists_quiet_and_stopped_lanes_never_waiting_ones() -> None:
    pane = StallsPane()
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 36)) as pilot:
        waiting_long = lane("asks-a1", "waiting", idle_s=5000.0)
        pane.sync([*LANES, waiting_long], 300)
        await pilot.pause()
        assert keys(pane) == ["slow-docs-a1", "quiet-one-a1"]
        assert plain(pane, "slow-docs-a1", "status").startswith("stopped by watchdog")
        assert plain(pane, "slow-docs-a1", "idle") == "15m"
        assert "4242 python" in plain(pane, "slow-docs-a1", "procs")
        assert "5150 sim" in plain(pane, "quiet-one-a1", "procs")
        assert pane.count == 2
        pane.sync(LANES, 420)  # exactly at the threshold counts
        assert "quiet-one-a1" in keys(pane)
        pane.sync(LANES, 421)
        assert keys(pane) == ["slow-docs-a1"]
        pane.sync(LANES, None)  # no warning threshold: only what the watchdog stopped
        assert keys(pane) == ["slow-docs-a1"]


async def test_a_hand_edited_stall_report_is_a_row_and_its_problems_are_in_the_tooltip() -> None:
    """`lane.json`'s `stall` is read once in the engine (`state.samples`): what was wrong with it is
    named, the rest is shown, and nothing in the pane looks a key up."""
    edited = lane("edited-a1", "stalled", idle_s=None, stall={"idle_s": "long", "idle_timeout_s": 900,
                                                               "tree": [{"pid": 77, "name": "sh"}, "zombie"]})
    pane = StallsPane()
    app = WidgetHost(pane, lambda p: p.sync([edited], 300))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert keys(pane) == ["edited-a1"]
        assert plain(pane, "edited-a1", "status") == "stopped by watchdog (15m limit)"
        assert plain(pane, "edited-a1", "idle") == "0s" and plain(pane, "edited-a1", "procs") == "77 sh"
        assert str(pane.tooltip).splitlines() == [
            "77 sh", "stall report: 'idle_s' is 'long', not a number of 0 or more",
            "stall report: 'tree'[1] is 'zombie', not a process object"]


# --- WorktreesPane ---------------------------------------------------------------------------------


async def test_worktrees_sync_keyed_by_lane() -> None:
    pane = WorktreesPane()
    app = WidgetHost(pane, lambda p: p.sync(WORKTREES))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert keys(pane) == ["fix-login-a1", "tidy-tests-a2", "add-cache-a1"]
        assert plain(pane, "add-cache-a1", "behind") == ""
        assert [plain(pane, "tidy-tests-a2", k) for k in ("insertions", "deletions")] == ["+310", "-128"]
        assert [plain(pane, "add-cache-a1", k) for k in ("insertions", "deletions")] == ["0", "0"]
        # The highlighted lane's own commits are its tooltip; a lane without commits says so.
        assert pane.selected_lane == "fix-login-a1"
        assert str(pane.tooltip) == "1f2e3d4 Fix the [login] redirect — codex"
        pane.focus()
        await pilot.press("down", "down")
        assert pane.selected_lane == "add-cache-a1"
        assert str(pane.tooltip) == "no commits on the lane branch: its work is uncommitted until accept"
        pane.sync([dict(WORKTREES[1], changed=13), WORKTREES[2]])
        await pilot.pause()
        assert keys(pane) == ["tidy-tests-a2", "add-cache-a1"]
        assert plain(pane, "tidy-tests-a2", "changed") == "13"
        assert pane.cell_updates == 1


def test_widgets_import_no_engine_module() -> None:
    """Widgets are given data: importing them must not pull in the engine (files, processes, git)."""
    code = ("import sys, lanes_tui.widgets\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith('lanes_tui.engine'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""
