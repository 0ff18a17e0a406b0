"""The list panes on Textual's public Line API (issue 31): they draw what a DataTable with a row cursor drew,
keep their keys and the mouse, and draw again only the rows that changed or came into view."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.renderables.styled import Styled
from textual.widgets import DataTable

from lanes_tui.engine.state.samples import parse_sample
from lanes_tui.widgets import LanesTable
from lanes_tui.widgets._keyed_view import WholeCellBar
from lanes_tui.widgets._row_lines import cell_segments
from tests.snapshot_apps.widget_apps import LANES, NOW, WidgetHost, lane

CONSOLE = Console(width=200, color_system="truecolor")
STYLES = [Style(), Style(color="red"), Style(bgcolor="#102030"), Style(bold=True, color="#e0e0e0"),
          Style(dim=True), Style(reverse=True, bgcolor="blue"), Style.from_meta({"row": 3, "column": 1})]
#: Mostly what the panes show (printable ASCII), and now and then what must go through Rich.
TEXTS = st.text(alphabet=st.sampled_from([*"ab Z09:/.%-_~ ", "·", "—", "✗", "\t", "é", "漢", "\x1b", "\u0301",
                                          "\u00a0", "\u200b", "\n"]), max_size=24)


def _cells(segments: list[Segment]) -> list[tuple[str, Style]]:
    """What the terminal shows: each character with its style, however the segments are cut."""
    return [(char, segment.style or Style()) for segment in segments for char in segment.text]


@settings(max_examples=400, deadline=None)
@given(plain=TEXTS, right=st.booleans(), tone=st.sampled_from([None, *STYLES[1:5]]), width=st.integers(3, 30),
       pre=st.sampled_from(STYLES), post=st.sampled_from(STYLES))
def test_a_cell_is_drawn_as_datatable_drew_it(plain: str, right: bool, tone: Style | None, width: int, pre: Style,
                                              post: Style) -> None:
    """Built directly for plain text, through Rich for the rest: what DataTable's `_render_cell` drew for a
    `Text` cell of a one-line row, character for character and style for style."""
    text = Text(plain, justify="right" if right else "left", end="")
    if tone is not None:
        text.stylize(tone)
    options = CONSOLE.options.update_dimensions(width, 1).update(no_wrap=True)
    rich = CONSOLE.render_lines(Styled(Padding(text, (0, 1)), pre_style=pre, post_style=post), options)[0]
    ours = cell_segments(plain, width, 1, pre, post, tone, right, CONSOLE, CONSOLE.options)
    assert _cells(ours) == _cells(rich)
    assert Segment.get_line_length(ours) == Segment.get_line_length(rich)


class _Stock(DataTable[Text]):
    """The Lanes table as it was: Textual's DataTable with a row cursor and the pane's frame."""

    DEFAULT_CSS = """
    _Stock { height: 1fr; border: round $panel; border-title-color: $text-muted; }
    _Stock:focus { border: round $primary; border-title-color: $primary; }
    """

    def on_mount(self) -> None:
        """The list panes' scrollbars are drawn in whole cells (issue 32): the one difference we chose."""
        self.vertical_scrollbar.renderer = WholeCellBar  # type: ignore[misc]
        self.horizontal_scrollbar.renderer = WholeCellBar  # type: ignore[misc]


async def _screens(table: Any, lanes: list[Any], moves: list[str]) -> list[str]:
    """The screen after each step: blurred, focused, then after each key of `moves`."""
    app = WidgetHost(table)
    shots = []
    async with app.run_test(size=(150, 16)) as pilot:
        if isinstance(table, LanesTable):
            table.sync(lanes, NOW)
        await pilot.pause()
        app.set_focus(None)
        await pilot.pause()
        shots.append(app.export_screenshot())
        table.focus()
        await pilot.pause()
        shots.append(app.export_screenshot())
        for key in moves:
            await pilot.press(key)
            await pilot.pause()
            shots.append(app.export_screenshot())
    return shots


async def test_the_lanes_table_looks_as_the_datatable_did() -> None:
    """Same lanes, same keys: the same screens as a stock DataTable holding the same texts (header, toned
    cells, the cursor focused and not, scrolled)."""
    lanes = [*LANES, *(lane(f"more-{i:02d}-a1", "running", idle_s=3.0) for i in range(12))]
    ours = LanesTable()
    # The texts our table shows, built once in a throwaway host (tones need an app's theme).
    async with WidgetHost(probe := LanesTable()).run_test(size=(150, 16)) as pilot:
        probe.sync(lanes, NOW)
        await pilot.pause()
        rows = [(key, probe.get_row(key)) for key in probe.row_keys]
    stock = _Stock(cursor_type="row")
    stock.border_title = "Lanes"

    def fill() -> None:
        for key, label in LanesTable.COLUMNS:
            stock.add_column(label, key=key)
        for key, texts in rows:
            stock.add_row(*texts, key=key)

    stock.call_later(fill)
    moves = ["down", "down", "pagedown", "up", "ctrl+end", "ctrl+home"]  # (home/end: first/last row here)
    assert await _screens(ours, lanes, moves) == await _screens(stock, lanes, moves)


async def test_keys_move_the_cursor_and_the_view_and_a_click_selects_a_row() -> None:
    many = [lane(f"lane-{i:03d}-a1", "running", idle_s=3.0) for i in range(60)]
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 20)) as pilot:
        table.sync(many, NOW)
        await pilot.pause()
        table.focus()
        page = table.scrollable_content_region.height - 1  # the rows below the header
        await pilot.press("pagedown")
        await pilot.pause()
        assert table.cursor_row == page and table.scroll_y == page
        await pilot.press("end")
        await pilot.pause()
        assert table.selected_key == "lane-059-a1" and table.scroll_y == table.max_scroll_y
        await pilot.press("pageup", "up")
        await pilot.pause()
        assert table.cursor_row == 59 - page - 1
        await pilot.press("home")
        await pilot.pause()
        assert table.cursor_row == 0 and table.scroll_y == 0
        await pilot.click(LanesTable, offset=(5, 4))  # the border, the header, then rows 0, 1, 2
        await pilot.pause()
        assert table.selected_key == "lane-002-a1"
        assert app.messages[-1].lane_id == "lane-002-a1"  # the pane's own message, as for a key
        await pilot.click(LanesTable, offset=(5, 1))  # the header: no row
        await pilot.pause()
        assert table.selected_key == "lane-002-a1"


async def test_a_row_out_of_view_is_neither_repainted_nor_drawn() -> None:
    """Only visible rows are drawn: a sample of a lane scrolled out of view refreshes nothing, and its line
    is built when it comes into view."""
    many = [lane(f"lane-{i:03d}-a1", "running", idle_s=3.0) for i in range(60)]
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 20)) as pilot:
        table.sync(many, NOW)
        await pilot.pause()
        refreshed: list[tuple[Region, ...]] = []
        real = table.refresh

        def spy(*regions: Region, **kwargs: Any) -> Any:
            refreshed.append(regions)
            return real(*regions, **kwargs)

        table.refresh = spy  # type: ignore[method-assign]
        built: list[str] = []
        real_build = table._build_row

        def build_spy(key: str, *args: Any) -> Any:
            built.append(key)
            return real_build(key, *args)

        table._build_row = build_spy  # type: ignore[method-assign]
        table.update_meters("lane-050-a1", parse_sample({"idle_s": 5.0, "cpu_percent": 1.0, "rss_bytes": 1024**2}))
        await pilot.pause()
        assert refreshed == [] and built == []
        table.update_meters("lane-001-a1", parse_sample({"idle_s": 5.0, "cpu_percent": 1.0, "rss_bytes": 1024**2}))
        await pilot.pause()
        assert built == ["lane-001-a1"] and [r[0].y for r in refreshed] == [2]  # under the header
        table.move_cursor(row=50)
        await pilot.pause()
        assert "lane-050-a1" in built and "lane-001-a1" not in built[1:]


async def test_a_new_theme_recolours_the_toned_cells() -> None:
    """A tone is a theme variable: after a theme change the table shows what a table made under it shows."""
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(150, 16)) as pilot:
        table.sync(LANES, NOW)
        await pilot.pause()
        before = table.get_cell("add-cache-a1", "state").spans[0].style
        app.theme = "nord"
        await pilot.pause()
        after = table.get_cell("add-cache-a1", "state").spans[0].style
        assert isinstance(before, Style) and isinstance(after, Style) and before.color != after.color
        changed = app.export_screenshot()

    fresh = LanesTable()
    app = WidgetHost(fresh)
    async with app.run_test(size=(150, 16)) as pilot:
        app.theme = "nord"
        fresh.sync(LANES, NOW)
        await pilot.pause()
        assert app.export_screenshot() == changed
