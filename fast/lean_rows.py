"""A list pane's row line made from its cells in one pass: DataTable's line, without its per-row overhead.

A meter tick, an elapsed cell that ticks, or a cursor move repaints a row of the Lanes table, and
DataTable makes that row's line in two layers (`_render_line_in_row`, then `_render_line`), each with
its own cache keyed by ten values, and works out per row what does not depend on the row: the header's
style (looked up through the CSS even for a body row), the ordered columns and every column's width
(twice), a coordinate and a cursor test per cell. At 20 new lanes, whose elapsed cells tick by the
second for their first minute, every visible row was made again every 2 s, 0.55–0.85 ms a row
(docs/benchmarks.md, B2).

`lean_row_line` makes the same line for the rows the list panes have (a row cursor, one line a row, no
fixed columns, no row labels) from the same cells (`_render_cell`, cached as before), styles and
padding; any other row gets None and goes DataTable's way. `tests/test_lean_rows.py` holds every line
equal to DataTable's, segment for segment, with the cursor, the mouse, focus, toned cells, a narrow
pane cut sideways and another theme.
"""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual._segment_tools import line_crop
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey


def lean_row_line(table: DataTable[Any], row_key: RowKey, row_index: int, y_in_row: int, x1: int, x2: int,
                  base_style: Style) -> Strip | None:
    """Line `y_in_row` of body row `row_index`, cut to `x1`..`x2`, as `DataTable._render_line` makes it;
    None for a row this does not cover (header, fixed, labelled, taller than a line, not a row cursor)."""
    if (table.cursor_type != "row" or y_in_row != 0 or row_index < table.fixed_rows or table.fixed_columns
            or (table._labelled_row_exists and table.show_row_labels) or table.rows[row_key].height != 1):
        return None
    cursor = table.cursor_coordinate.row == row_index
    hover = table.hover_coordinate.row == row_index
    row_style = table._get_row_style(row_index, base_style)
    render_cell = table._render_cell
    segments: list[Segment] = []
    table_width = table._row_label_column_width
    for column_index, column in enumerate(table.ordered_columns):
        width = column.get_render_width(table)
        table_width += width
        segments.extend(render_cell(row_index, column_index, row_style, width, cursor=cursor, hover=hover)[0])
    extend_style, _ = table._get_styles_to_render_cell(False, False, False, hover, cursor, table.show_cursor,
                                                       table._show_hover_cursor, False, False)
    extend_style = row_style + extend_style
    extend_style += Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
    width = table.size.width
    segments.append(Segment(" " * max(0, width - table_width), extend_style))
    return Strip(line_crop(segments, x1, x2, width)).adjust_cell_length(width, base_style).simplify()
