"""The context meter in the dashboard: the Lanes table's `ctx` column (flagged near the limit), its
tooltip, and the Meters pane's context line fed by `meters_feed.contexts`."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.widgets import Static

from lanes_tui.app.dashboard.meters_feed import contexts, meters_mapping
from lanes_tui.widgets import LanesTable, MetersPane
from tests.snapshot_apps.widget_apps import NOW, WidgetHost, lane

HALF = {"used": 126_000, "window": 200_000, "warn": 0.85, "source": "reported"}
FULL = {"used": 185_000, "window": 200_000, "warn": 0.85, "source": "table"}
LANES = [
    lane("half-a1", "running", context=HALF),
    lane("full-a1", "waiting", context=FULL),
    lane("done-a1", "ready", context=FULL),  # ended: shown, not flagged
    lane("plain-a1", "running"),  # its provider reports no context
]


def _plain(table: LanesTable, row: str, column: str) -> str:
    cell = table.get_cell(row, column)
    return cell.plain if isinstance(cell, Text) else str(cell)


def _style(table: LanesTable, row: str, column: str) -> Style:
    """The style a cell was given (an empty one for a cell in the default tone)."""
    spans = table.get_cell(row, column).spans
    style = spans[0].style if spans else Style()
    assert isinstance(style, Style)
    return style


async def test_ctx_column_shows_the_fraction_and_flags_a_live_lane_near_its_limit() -> None:
    table = LanesTable()
    app = WidgetHost(table, lambda t: t.sync(LANES, NOW))
    async with app.run_test(size=(200, 20)) as pilot:
        await pilot.pause()
        assert [_plain(table, key, "context") for key in ("half-a1", "full-a1", "done-a1", "plain-a1")] == \
            ["63%", "92%", "92%", "–"]
        warning = Color.parse(app.theme_variables["warning"]).rich_color
        assert _style(table, "full-a1", "context").color == warning
        assert _style(table, "half-a1", "context").color != warning
        assert _style(table, "done-a1", "context").color != warning
        assert _style(table, "plain-a1", "context").dim
        table.focus()
        await pilot.press("down")
        await pilot.pause()
        assert str(table.tooltip) == ("waiting: waiting for a test\n"
                                      "context: 185.0k of 200.0k tokens (92%), at or past the 85% warning")


def test_meters_feed_names_live_lanes_with_a_meter_only() -> None:
    fed = contexts(LANES)
    assert set(fed) == {"half-a1", "full-a1"}
    assert fed["full-a1"] == {"used": 185_000, "window": 200_000, "fraction": 0.925, "near": True}
    assert meters_mapping({}, [], LANES, now=NOW)["contexts"] == fed


async def test_meters_pane_context_line_fullest_first_and_flagged() -> None:
    pane = MetersPane()
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        text = pane.query_one("#meters-text", Static)
        pane.update_machine({"cpu_percent": 10.0})
        await pilot.pause()
        assert "context" not in str(text.content)  # no agent reports one: the pane keeps its lines
        pane.update_machine({"cpu_percent": 10.0, "contexts": {**contexts(LANES), "junk": {"used": "x"}}})
        await pilot.pause()
        content: Any = text.content
        last = str(content).splitlines()[-1]
        assert last == "context  full-a1 185.0k/200.0k 92%  half-a1 126.0k/200.0k 63%"
        start = str(content).index("185.0k")
        styles = [str(span.style) for span in content.spans if span.start <= start < span.end]
        assert "$warning" in styles
