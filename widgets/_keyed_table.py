"""A keyed table: rows with stable keys, diff-updated, never cleared (HOUSE_STYLE point 7).

Every pane that lists things (lanes, questions, stalls, worktrees, plan tickets) is one of these:
`_apply` drops rows whose key is gone, rewrites only the cells whose value changed, adds new rows and
re-orders only when the order changed. The cursor follows its row (by key, not by index), so a
refresh that removes or reorders other rows never moves the lead's selection to a different lane.

Subclasses describe cells as `Cell` tuples (text, tone, alignment): cheap to build and to compare
every tick. What is drawn, and how little is drawn again, is `_keyed_view`'s (Textual's public Line
API); a cell's tone is resolved from the running theme when its line is built (`$warning` is a theme
variable Rich cannot read), and again when the theme changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text

from lanes_tui.widgets._keyed_view import KeyedView
from lanes_tui.widgets._row_lines import Cell

__all__ = ["Cell", "KeyedTable", "Row"]

#: A row as the subclasses build it: its key and one Cell per column, in COLUMNS order.
Row = tuple[str, tuple[Cell, ...]]


class KeyedTable(KeyedView):
    """Base of the list panes. Subclasses set COLUMNS and TITLE and call `_apply` with their rows."""

    DEFAULT_CSS = """
    KeyedTable {
        height: 1fr;
        max-height: 100%;
        background: $surface;
        color: $foreground;
        border: round $panel;
        border-title-color: $text-muted;
        & > .keyed-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .keyed-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .keyed-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .keyed-table--hover {
            background: $block-hover-background;
        }
        &:focus {
            background-tint: $foreground 5%;
            border: round $primary;
            border-title-color: $primary;
            & > .keyed-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .keyed-table--header {
                background-tint: $foreground 5%;
            }
        }
    }
    """
    #: Shown in the border; the pane name the lead reads.
    TITLE: ClassVar[str] = ""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.cell_updates = 0
        """How many cells were rewritten; the tests use it to prove nothing was rebuilt."""
        if self.TITLE:
            self.border_title = self.TITLE

    def get_cell(self, key: str, column: str) -> Text:
        """The text of a cell as drawn, its tone resolved from the theme (KeyError for no such cell)."""
        cell = self._cells[key][self._columns.index(column)]
        text = Text(cell.text, justify="right" if cell.right else "left", end="")
        tone = self._tone(cell)
        if tone is not None:
            text.stylize(tone)
        return text

    def get_row(self, key: str) -> list[Text]:
        """The texts of row `key`'s cells, in COLUMNS order."""
        return [self.get_cell(key, column) for column in self._columns]

    def keys_around(self, key: str) -> list[str]:
        """The keys of the rows just below and just above `key`'s (where the cursor goes next)."""
        row = self._index.get(key)
        if row is None:
            return []
        return [self._keys[i] for i in (row + 1, row - 1) if 0 <= i < len(self._keys)]

    def _apply(self, rows: Sequence[Row]) -> None:
        """Make the table show exactly `rows`, in that order, touching only what changed."""
        keep = self.selected_key
        order = [key for key, _ in rows]
        changed: list[str] = []
        for key in set(self._cells).difference(order):
            del self._cells[key]
            self._lines.pop(key, None)
        for key, cells in rows:
            old = self._cells.get(key)
            if old is None:
                self._unmeasured.update((key, column) for column in range(len(cells)))
            elif old != cells:
                for column, (before, after) in enumerate(zip(old, cells, strict=True)):
                    if before != after:
                        self.cell_updates += 1
                        self._unmeasured.add((key, column))
                changed.append(key)
                self._lines.pop(key, None)
            self._cells[key] = cells
        if order != self._keys:
            self._keys, self._index = order, {key: i for i, key in enumerate(order)}
            self._set_virtual_size()
            self.refresh()
        else:
            for key in changed:
                self._refresh_row(self._index[key])
        if keep is not None and keep in self._index:
            self.move_cursor(row=self._index[keep], scroll=self._index[keep] != self._cursor)
        elif self._keys and self._cursor >= len(self._keys):
            self.move_cursor(row=len(self._keys) - 1)
        self._note_selection()
        self._measure_soon()

    def _update_cells(self, key: str, changes: dict[str, Cell]) -> None:
        """Rewrite some cells of one row (a meter tick): only its line is built again and repainted."""
        old = self._cells.get(key)
        if old is None:
            return
        cells = list(old)
        for column, cell in changes.items():
            i = self._columns.index(column)
            if cells[i] != cell:
                cells[i] = cell
                self.cell_updates += 1
                self._unmeasured.add((key, i))
        if cells != list(old):
            self._cells[key] = tuple(cells)
            self._lines.pop(key, None)
            self._refresh_row(self._index[key])
            self._measure_soon()
