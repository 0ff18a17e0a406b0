"""A DataTable with stable row keys that is diff-updated, never cleared (HOUSE_STYLE point 7).

Every pane that lists things (lanes, questions, stalls, worktrees) is one of these: `_apply` drops
rows whose key is gone, calls `update_cell` only for cells whose value changed, adds new rows, and
re-sorts only when the order changed — all inside `app.batch_update()`. The cursor follows its row
(by key, not by index), so a refresh that removes or reorders other rows never moves the lead's
selection to a different lane.

Subclasses describe cells as `Cell` tuples (text, tone, alignment): cheap to build and to compare
every tick; a Rich `Text` is made only for a cell that changed, with its colour taken from the
running theme (Rich text cannot resolve `$warning` itself), and remade when the theme changes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar, NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.coordinate import Coordinate
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets._data_table import _EMPTY_TEXT
from textual.widgets.data_table import ColumnKey, RowDoesNotExist, RowKey

from lanes_tui.widgets._format import tone_style
from lanes_tui.widgets._framed_rows import FramedRowsCache
from lanes_tui.widgets._lean_rows import lean_row_line
from lanes_tui.widgets._plain_cell import plain_cell_line


class Cell(NamedTuple):
    """What a cell shows. `tone` is a theme variable name ("warning", "error", "success"), "dim" or ""."""

    text: str
    tone: str = ""
    right: bool = False
    bold: bool = False


#: A row as the subclasses build it: its key and one Cell per column, in COLUMNS order.
Row = tuple[str, tuple[Cell, ...]]


class KeyedTable(DataTable[Text]):
    """Base of the list panes. Subclasses set COLUMNS and call `_apply` with their rows."""

    DEFAULT_CSS = """
    KeyedTable {
        height: 1fr;
        border: round $panel;
        border-title-color: $text-muted;
    }
    KeyedTable:focus {
        border: round $primary;
        border-title-color: $primary;
    }
    """

    #: (column key, label) pairs; the keys are what `update_cell` and the tests use.
    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: Shown in the border; the pane name the lead reads.
    TITLE: ClassVar[str] = ""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, name=name, id=id, classes=classes)
        self._cells: dict[str, tuple[Cell, ...]] = {}
        self._selected: str | None = None
        self.cell_updates = 0
        """How many cells `update_cell` rewrote; the tests use it to prove nothing was rebuilt."""
        # Scoped render caches in place of DataTable's own, same sizes (see `_forget_cell`).
        self._cells_cached = RowScopedCache(10000, lambda key: (key[0], key[1]))  # by (row, column)
        self._rows_cached = RowScopedCache(1000, lambda key: key[0])
        self._lines_cached = RowScopedCache(1000, self._row_of_line)
        self._cell_render_cache = self._cells_cached
        self._row_render_cache = self._rows_cached
        self._line_cache = self._lines_cached
        # A row is framed (border round it) once, not at every frame that shows it: a scroll or a meter
        # tick re-frames only the rows whose line changed (see `_framed_rows`).
        self._styles_cache = FramedRowsCache()
        if self.TITLE:
            self.border_title = self.TITLE

    def on_mount(self) -> None:
        """Columns need the app's console to measure labels, so they are added once mounted.

        Subclasses must not call this (Textual runs each class's `on_mount` itself).
        """
        self._ensure_columns()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())

    def _ensure_columns(self) -> None:
        if not self.columns:
            for key, label in self.COLUMNS:
                self.add_column(label, key=key)

    @property
    def selected_key(self) -> str | None:
        """The key of the row under the cursor, or None when the table is empty."""
        if not self.row_count:
            return None
        return self._key_at(min(max(self.cursor_row, 0), self.row_count - 1))

    def keys_around(self, key: str) -> list[str]:
        """The keys of the rows just below and just above `key`'s (where the cursor goes next)."""
        try:
            row = self.get_row_index(key)
        except RowDoesNotExist:
            return []
        around = (self._key_at(index) for index in (row + 1, row - 1) if 0 <= index < self.row_count)
        return [k for k in around if k is not None]

    def _key_at(self, row: int) -> str | None:
        value = self.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value
        return value if isinstance(value, str) else None

    def _apply(self, rows: Sequence[Row]) -> None:
        """Make the table show exactly `rows`, in that order, touching only what changed."""
        self._ensure_columns()  # a parent's on_mount may sync before ours has run
        keep = self.selected_key
        wanted = {key for key, _ in rows}
        columns = [key for key, _ in self.COLUMNS]
        with self.app.batch_update():
            for key in [k for k in self._cells if k not in wanted]:
                self.remove_row(key)
                del self._cells[key]
            for key, cells in rows:
                old = self._cells.get(key)
                if old is None:
                    self.add_row(*(self._cell_text(c) for c in cells), key=key)
                elif old != cells:
                    for column, before, after in zip(columns, old, cells, strict=True):
                        if before != after:
                            self._set_cell(key, column, after)
                self._cells[key] = cells
            order = [key for key, _ in rows]
            if order != self._current_order():
                # `sort` hands the key function a row's cell values, not its key: match them by their
                # text (rows with identical text may swap, which nobody can see).
                position = {_fingerprint(cells): i for i, (_, cells) in reversed(list(enumerate(rows)))}
                self.sort(key=lambda values: position.get(_fingerprint(values), len(position)))
            if keep is not None and keep in self._cells:
                index = self.get_row_index(keep)
                if index != self.cursor_row:
                    self.move_cursor(row=index, animate=False, scroll=False)
        self._note_selection()

    def _update_cells(self, key: str, changes: dict[str, Cell]) -> None:
        """Rewrite some cells of one row (a meter tick), keeping the cache in step for the next diff."""
        old = self._cells.get(key)
        if old is None:
            return
        columns = [column for column, _ in self.COLUMNS]
        cells = list(old)
        with self.app.batch_update():
            for column, cell in changes.items():
                i = columns.index(column)
                if cells[i] != cell:
                    cells[i] = cell
                    self._set_cell(key, column, cell)
        self._cells[key] = tuple(cells)

    def _set_cell(self, key: str, column: str, cell: Cell) -> None:
        """`update_cell`, asking for a width update only when the value is wider than its column
        (and repainting just the row otherwise: see `update_cell` below).

        With `update_width=True` on every change, a value narrower than the column makes DataTable
        re-measure the whole column: per changed cell, per tick — quadratic in the number of lanes.
        Columns therefore only grow (as with DataTable's own `add_row`).
        """
        current = self.columns.get(ColumnKey(column))
        grow = current is None or cell_len(cell.text) > current.content_width
        self.update_cell(key, column, self._cell_text(cell), update_width=grow)
        self.cell_updates += 1

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
        if update_width or row not in self._row_locations or column not in self._column_locations:
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
        (`_lean_rows`), the same line DataTable makes.
        """
        if self.cursor_type != "row":
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
            if row < 0 or (strip := lean_row_line(self, row_key, row, y_in_row, x1, x2, base_style)) is None:
                strip = super()._render_line(y, x1, x2, base_style)  # the header, or a row of another shape
            self._lines_cached[key] = strip
        return strip

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False) -> list[list[Segment]]:
        """DataTable's cell, built directly for a plain one-line cell (`_plain_cell`), Rich's path otherwise.

        Same cache and key as DataTable's, so `_forget_cell` and everything that clears the cache
        apply to both paths alike.
        """
        row_key = self._row_locations.get_key(row_index)
        if row_key is None or row_index < self.fixed_rows or column_index < self.fixed_columns:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)  # header, labels
        key = (row_key, self._column_locations.get_key(column_index), base_style, cursor, hover,
               self._show_hover_cursor, self._update_count, self._pseudo_class_state)
        lines: list[list[Segment]] | None = self._cells_cached.get(key)
        if lines is not None:
            return lines
        cell = self._cell_renderable(row_key, row_index, key[1], column_index)
        if isinstance(cell, Text) and self.rows[row_key].height == 1:
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
        row). A cell holding a Rich `Text` (all of ours: `_cell_text`) or nothing is formatted as it
        formats it: the text itself, or its empty text when there is none; anything else goes its way.
        """
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

    def _cell_text(self, cell: Cell) -> Text:
        """The Rich text of a cell (never a str: DataTable parses str as markup, and agents name tasks)."""
        text = Text(cell.text, justify="right" if cell.right else "left", end="")
        if cell.tone or cell.bold:
            text.stylize(tone_style(self.app, cell.tone, bold=cell.bold))
        return text

    def _restyle(self) -> None:
        """Re-render the toned cells after a theme change (their Rich text holds resolved colours)."""
        columns = [column for column, _ in self.COLUMNS]
        with self.app.batch_update():
            for key, cells in self._cells.items():
                for column, cell in zip(columns, cells, strict=True):
                    if cell.tone:
                        self._set_cell(key, column, cell)

    def _current_order(self) -> list[str]:
        return sorted(self._cells, key=lambda k: self.get_row_index(k))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Turn the cursor's moves into this pane's own message, once per distinct row."""
        if event.data_table is self:
            self._note_selection()

    def _note_selection(self) -> None:
        """Post the selection message if the row under the cursor is a different key than last time.

        Reads the cursor now rather than trusting the event: a sync may have moved the cursor back
        to its lane after the event was posted, and the lead should not see a flicker of selections.
        """
        key = self.selected_key
        if key != self._selected:
            self._selected = key
            self._selection_changed(key)

    def _selection_changed(self, key: str | None) -> None:
        """Subclasses post their message here."""


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


def _fingerprint(values: Sequence[Any]) -> tuple[str, ...]:
    """A row's text, from Cells (ours) or Text (what DataTable stores and hands to `sort`)."""
    return tuple(v.text if isinstance(v, Cell) else v.plain if isinstance(v, Text) else str(v) for v in values)
