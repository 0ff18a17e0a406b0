"""A list pane's body row is made in one pass (`fast.lean_rows`) and is DataTable's line, segment for
segment (issue 15, B2 and B1).

Each check renders every line of the Lanes table both ways on the same table in the same state, with
every render cache emptied first: the pane's own `_render_line` (the lean row for a body row) and
`DataTable._render_line` (Textual's two layers). States: toned and blank cells, a meter tick, the
cursor on a row and the mouse on another, focused and not, a pane too narrow for its columns scrolled
sideways, and another theme.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from lanes_tui.fast.lean_rows import lean_row_line
from lanes_tui.widgets import LanesTable
from tests.snapshot_apps.widget_apps import NOW, WidgetHost, lane, showing_lanes


def _every_line_both_ways(table: LanesTable) -> int:
    """Assert each line of the table (header and rows) is the same both ways; the body rows made lean."""
    width = table.size.width
    x1 = int(table.scroll_x)
    x2 = x1 + width
    base = table.rich_style
    lean = 0
    for y in range(table.header_height + table.row_count):
        for cache in (table._lines_cached, table._rows_cached):
            cache.clear()
        ours = list(table._render_line(y, x1, x2, base))
        for cache in (table._lines_cached, table._rows_cached):
            cache.clear()
        theirs = list(DataTable._render_line(table, y, x1, x2, base))
        assert ours == theirs, f"line {y} differs"
        assert sum(s.cell_length for s in ours) == width
        row_key, y_in_row = table._get_offsets(y)
        index = table._row_locations.get(row_key)
        if index is not None and lean_row_line(table, row_key, index, y_in_row, x1, x2, base) is not None:
            lean += 1
            _every_cell_both_ways(table, row_key, index, base)
    return lean


def _every_cell_both_ways(table: LanesTable, row_key: RowKey, index: int, base: Style) -> None:
    """Each cell of the row: the renderable DataTable formats for it, and its lines, both ways."""
    cursor = table.cursor_row == index
    for column_index, column in enumerate(table.ordered_columns):
        formatted = table._get_row_renderables(index).cells[column_index]
        assert table._cell_renderable(row_key, index, column.key, column_index) is formatted
        width = column.get_render_width(table)
        table._cells_cached.clear()
        ours = table._render_cell(index, column_index, base, width, cursor=cursor)
        table._cells_cached.clear()
        theirs = DataTable._render_cell(table, index, column_index, base, width, cursor=cursor)
        # (the plain cell path may split a run of one style differently: the line joins them, `simplify`)
        assert [list(Segment.simplify(line)) for line in ours] == [list(Segment.simplify(line)) for line in theirs], \
            f"row {index}, column {column.key.value}"


def _segments(table: LanesTable, y: int) -> list[Segment]:
    return list(table._render_line(y, int(table.scroll_x), int(table.scroll_x) + table.size.width, table.rich_style))


async def test_every_body_row_is_datatables_line_in_every_state() -> None:
    states = ["running", "waiting", "stalled", "ready", "rejected", "exited", "lost", "accepted"]
    lanes = [lane(f"lane-{i:02d}-a1", states[i % len(states)], task=f"task {i}") for i in range(12)]
    async with showing_lanes(lanes, height=16, size=(140, 24)) as (table, app, pilot):
        assert _every_line_both_ways(table) == 12  # every body row made lean, the header Textual's way
        table.update_meters("lane-01-a1", {"idle_s": 5, "cpu_percent": 12.5, "rss_bytes": 2 * 1024**2})
        await pilot.pause()
        assert _every_line_both_ways(table) == 12
        table.focus()
        await pilot.press("down", "down", "down")
        assert table.cursor_row == 3
        table._show_hover_cursor = True
        table.hover_coordinate = Coordinate(5, 0)
        await pilot.pause()
        assert _every_line_both_ways(table) == 12
        table.blur()
        await pilot.pause()
        assert _every_line_both_ways(table) == 12
        app.theme = "textual-light"
        await pilot.pause()
        assert _every_line_both_ways(table) == 12


async def test_a_narrow_pane_cut_sideways_is_datatables_line() -> None:
    lanes = [lane(f"lane-{i:02d}-a1", "running" if i % 2 else "waiting", task=f"a longer task {i}") for i in range(6)]
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(60, 16)) as pilot:
        table.sync(lanes, NOW)
        await pilot.pause()
        assert table.virtual_size.width > table.size.width  # the columns do not fit: the row is cut
        assert _every_line_both_ways(table) == 6
        table.scroll_to(x=17, animate=False)
        await pilot.pause()
        assert table.scroll_x == 17
        assert _every_line_both_ways(table) == 6
        assert _segments(table, 1)[0].text != _segments(table, 1)[-1].text


async def test_a_row_of_another_shape_goes_datatables_way() -> None:
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 12)) as pilot:
        table.sync([lane("only-a1", "running")], NOW)
        await pilot.pause()
        row_key, _ = table._get_offsets(1)
        base = table.rich_style
        assert lean_row_line(table, row_key, 0, 0, 0, 100, base) is not None
        table.cursor_type = "cell"
        assert lean_row_line(table, row_key, 0, 0, 0, 100, base) is None
        table.cursor_type = "row"
        table.fixed_columns = 1
        assert lean_row_line(table, row_key, 0, 0, 0, 100, base) is None
