"""A DataTable whose list-pane rows render fast: scoped caches, a row repaint per changed cell, lines and
cells built directly. Off (`checks.enabled("table")` false), it is DataTable, untouched.

What each part replaces, and why (docs/benchmarks.md, B1 and B2):
- `update_cell` without a width change refreshes the row, not the table: with a hundred lanes a meter
  tick of one lane re-rendered every visible row;
- `RowScopedCache` in place of DataTable's render caches, so a changed cell drops its own entries and
  its row's lines, not every row's (`_update_count` no longer bumped per cell: ~20 ms a key-press at 100
  lanes re-rendering every visible row after a meter sample);
- `_render_line` keyed by whether the cursor is on the line's row (not where it is), the row made in one
  pass (`lean_rows`, 0.55-0.85 ms a row before);
- `_render_cell` draws a plain one-line cell without Rich (`plain_cell`, ~0.3 ms a cell before);
- the rows framed once (`framed_rows`, its own switch).
`tests/test_lean_rows.py`, `tests/test_plain_cell.py`, `tests/test_widgets_repaint.py` hold it equal to
DataTable.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from lanes_tui.fast.checks import enabled

__all__ = ["FastDataTable", "RowScopedCache"]


class FastDataTable(DataTable[Text]):
    """`DataTable[Text]` with the fast paths above; its public API is DataTable's."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fast = enabled("table")
        """Whether this table takes the fast paths (decided once, at construction)."""
        if self.fast:
            # Scoped render caches in place of DataTable's own, same sizes (see `_forget_cell`).
            self._cells_cached = RowScopedCache(10000, lambda key: (key[0], key[1]))  # by (row, column)
            self._rows_cached = RowScopedCache(1000, lambda key: key[0])
            self._lines_cached = RowScopedCache(1000, self._row_of_line)
            self._cell_render_cache = self._cells_cached
            self._row_render_cache = self._rows_cached
            self._line_cache = self._lines_cached
        if enabled("framed_rows"):
            from lanes_tui.fast.framed_rows import FramedRowsCache

            # A row is framed (border round it) once, not at every frame that shows it: a scroll or a meter
            # tick re-frames only the rows whose line changed (see `framed_rows`).
            self._styles_cache = FramedRowsCache()

    def update_cell(self, row_key: RowKey | str, column_key: ColumnKey | str, value: Text, *,
                    update_width: bool = False) -> None:
        """DataTable's `update_cell`, repainting the row rather than the table when no width changes.

        DataTable's ends with a refresh of the whole widget, so with a hundred lanes a meter tick of
        one lane re-rendered every visible row. Without a width update only the row's lines can look
        different: the value is stored as DataTable stores it (its counter bumped, so no cache serves
        the old text) and only that row's region is refreshed, as DataTable does when the cursor
        moves. A row outside the window is not repainted at all.
        """
        row = RowKey(row_key) if isinstance(row_key, str) else row_key
        column = ColumnKey(column_key) if isinstance(column_key, str) else column_key
        if (not self.fast or update_width or row not in self._row_locations
                or column not in self._column_locations):
            super().update_cell(row, column, value, update_width=update_width)  # (raises for a missing cell)
            return
        self._data[row][column] = value
        index = self.get_row_index(row)
        self._forget_cell(row, column, index)
        self.refresh_row(index)

    def _forget_cell(self, row: RowKey, column: ColumnKey, index: int) -> None:
        """Drop what DataTable cached for one changed cell: the cell itself and its row's lines.

        DataTable keys every render cache by `_update_count`, so bumping it for one changed cell made
        every other row render again, cell by cell, at the next frame that showed it: with a hundred
        lanes a meter sample a second meant a cursor move that scrolled re-rendered every visible row
        (B1). A value change moves no row and changes no height, so only the cell and the lines of its
        row can be stale; the caches are `RowScopedCache`s, which can drop exactly those entries (the
        row's other cells are kept: a meter sample changes three cells of fourteen).
        """
        self._cells_cached.drop((row, column))
        self._rows_cached.drop(row)
        self._lines_cached.drop(row)
        self._row_renderable_cache.discard((self._update_count, index))

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        """DataTable's line, cached by whether the cursor (and the mouse) is on this line's row.

        DataTable keys its line and row caches by the cursor's coordinate, so every cursor move that
        scrolls the table rendered every visible row again from its cells (B1: ~20 ms a key-press at
        100 lanes). With a row cursor a line looks the same wherever the cursor is, as long as it is
        not on this row: so the key says only that. A body row's line is made from its cells in one pass
        (`lean_rows`), the same line DataTable makes.
        """
        if not self.fast or self.cursor_type != "row":
            return super()._render_line(y, x1, x2, base_style)
        try:
            row_key, y_in_row = self._get_offsets(y)
        except LookupError:
            return super()._render_line(y, x1, x2, base_style)
        row = self._row_locations.get(row_key)
        row = -1 if row is None else row
        key = (y, "row-cursor", x1, x2, self.size.width, self.cursor_coordinate.row == row,
               self.hover_coordinate.row == row, base_style, self.show_cursor, self._show_hover_cursor,
               self._update_count, self._pseudo_class_state)
        strip: Strip | None = self._lines_cached.get(key)
        if strip is None:
            from lanes_tui.fast.lean_rows import lean_row_line

            if row < 0 or (strip := lean_row_line(self, row_key, row, y_in_row, x1, x2, base_style)) is None:
                strip = super()._render_line(y, x1, x2, base_style)  # the header, or a row of another shape
            self._lines_cached[key] = strip
        return strip

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False) -> list[list[Segment]]:
        """DataTable's cell, built directly for a plain one-line cell (`plain_cell`), Rich's path otherwise.

        Same cache and key as DataTable's, so `_forget_cell` and everything that clears the cache
        apply to both paths alike.
        """
        row_key = self._row_locations.get_key(row_index)
        if not self.fast or row_key is None or row_index < self.fixed_rows or column_index < self.fixed_columns:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)  # header, labels
        key = (row_key, self._column_locations.get_key(column_index), base_style, cursor, hover,
               self._show_hover_cursor, self._update_count, self._pseudo_class_state)
        lines: list[list[Segment]] | None = self._cells_cached.get(key)
        if lines is not None:
            return lines
        cell = self._cell_renderable(row_key, row_index, key[1], column_index)
        if isinstance(cell, Text) and self.rows[row_key].height == 1:
            from lanes_tui.fast.plain_cell import plain_cell_line

            component, post = self._get_styles_to_render_cell(
                False, False, False, hover, cursor, self.show_cursor, self._show_hover_cursor,
                self.cursor_foreground_priority == "css", self.cursor_background_priority == "css")
            pre = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component
            line = plain_cell_line(cell, width, self.cell_padding, pre, post)
            if line is not None:
                self._cells_cached[key] = lines = [line]
                return lines
        return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)

    def _cell_renderable(self, row_key: RowKey, row_index: int, column_key: ColumnKey | None,
                         column_index: int) -> Any:
        """What DataTable's `_get_row_renderables` gives for this cell, without formatting the whole row.

        DataTable formats every cell of a row again when one changes (its renderables are cached by
        row). A cell holding a Rich `Text` (all of ours) or nothing is formatted as it formats it: the
        text itself, or its empty text when there is none; anything else goes its way.
        """
        from textual.widgets._data_table import _EMPTY_TEXT

        value = self._data.get(row_key, {}).get(column_key) if column_key is not None else None
        if value is None or isinstance(value, Text):
            return value or _EMPTY_TEXT
        return self._get_row_renderables(row_index).cells[column_index]

    def _row_of_line(self, key: Any) -> Hashable:
        """The row a cached line (keyed by its y) belongs to, as the table's offsets say now."""
        try:
            return self._get_offsets(key[0])[0]
        except LookupError:
            return None


class RowScopedCache(LRUCache[Any, Any]):
    """DataTable's LRU cache, plus an index from each entry to its scope, so one scope's entries can go.

    `scope_of(key)` names what a key belongs to when it is stored: its row (lines, rows) or its row and
    column (cells). Entries the LRU evicts stay in the index until their scope is dropped (discarding a
    missing key is a no-op); a scope's index is pruned to the live keys once it grows past `MAX_STALE`,
    so it stays small for a table that lives for hours.
    """

    MAX_STALE = 64

    def __init__(self, maxsize: int, scope_of: Callable[[Any], Hashable]) -> None:
        super().__init__(maxsize)
        self._scope_of = scope_of
        self._by_scope: dict[Hashable, set[Any]] = {}

    def set(self, key: Any, value: Any) -> None:
        super().set(key, value)
        keys = self._by_scope.setdefault(self._scope_of(key), set())
        keys.add(key)
        if len(keys) > self.MAX_STALE:
            keys.intersection_update(self._cache)

    __setitem__ = set

    def drop(self, scope: Hashable) -> None:
        """Forget every entry stored under `scope` (what `scope_of` gave for its key)."""
        for key in self._by_scope.pop(scope, ()):
            self.discard(key)

    def clear(self) -> None:
        super().clear()
        self._by_scope.clear()
