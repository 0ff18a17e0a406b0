"""A DataTable with stable row keys that is diff-updated, never cleared (HOUSE_STYLE point 7).

Every pane that lists things (lanes, questions, stalls, worktrees) is one of these: `_apply` drops
rows whose key is gone, calls `update_cell` only for cells whose value changed, adds new rows, and
re-sorts only when the order changed — all inside `app.batch_update()`. The cursor follows its row
(by key, not by index), so a refresh that removes or reorders other rows never moves the lead's
selection to a different lane.

Subclasses describe cells as `Cell` tuples (text, tone, alignment): cheap to build and to compare
every tick; a Rich `Text` is made only for a cell that changed, with its colour taken from the
running theme (Rich text cannot resolve `$warning` itself), and remade when the theme changes.

The rendering underneath (row repaints, scoped caches, lines and cells built directly) is the fence's
`FastDataTable` (`lanes_tui.fast.table`): this module uses DataTable's public API only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

from rich.cells import cell_len
from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowDoesNotExist

from lanes_tui.fast.table import FastDataTable
from lanes_tui.widgets._format import tone_style


class Cell(NamedTuple):
    """What a cell shows. `tone` is a theme variable name ("warning", "error", "success"), "dim" or ""."""

    text: str
    tone: str = ""
    right: bool = False
    bold: bool = False


#: A row as the subclasses build it: its key and one Cell per column, in COLUMNS order.
Row = tuple[str, tuple[Cell, ...]]


class KeyedTable(FastDataTable):
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
        (and repainting just the row otherwise: see `FastDataTable.update_cell`).

        With `update_width=True` on every change, a value narrower than the column makes DataTable
        re-measure the whole column: per changed cell, per tick — quadratic in the number of lanes.
        Columns therefore only grow (as with DataTable's own `add_row`).
        """
        current = self.columns.get(ColumnKey(column))
        grow = current is None or cell_len(cell.text) > current.content_width
        self.update_cell(key, column, self._cell_text(cell), update_width=grow)
        self.cell_updates += 1

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


def _fingerprint(values: Sequence[Any]) -> tuple[str, ...]:
    """A row's text, from Cells (ours) or Text (what DataTable stores and hands to `sort`)."""
    return tuple(v.text if isinstance(v, Cell) else v.plain if isinstance(v, Text) else str(v) for v in values)
