"""A keyed list on Textual's public Line API: rows with stable keys, diff-updated, never cleared
(HOUSE_STYLE point 7).

Every pane that lists things (lanes, questions, stalls, worktrees, plan tickets) is one of these:
`_apply` drops rows whose key is gone, rewrites only the cells whose value changed, adds new rows and
re-orders only when the order changed. The cursor follows its row (by key, not by index), so a refresh
that removes or reorders other rows never moves the lead's selection to a different lane.

Subclasses describe cells as `Cell` tuples (text, tone, alignment): cheap to build and to compare every
tick. The widget is a `ScrollView` drawing one line per row in `render_line` (the header fixed on
top); each row's line is kept (a `Strip`) until its cells, the column widths, the cursor or hover on
it, the width, the horizontal scroll or the styles (focus, theme) change, so a meter tick of one lane
builds that lane's line and refreshes that one line, and a scroll draws only the rows it brings in.
A cell's tone is resolved from the running theme when its line is built (`$warning` is a theme
variable Rich cannot read), plain cells without Rich (`_row_lines`). It looks as Textual's DataTable
with a row cursor did (the same styles, the same segments): the snapshots did not change.

Only public Textual and Rich API (the fence, `lanes_tui.fast`, only frames the rows: `framed_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size, Spacing
from textual.scroll_view import ScrollView
from textual.strip import Strip

from lanes_tui.fast.framed_rows import use_framed_rows
from lanes_tui.widgets._format import tone_style
from lanes_tui.widgets._row_lines import cell_segments, text_width


class Cell(NamedTuple):
    """What a cell shows. `tone` is a theme variable name ("warning", "error", "success"), "dim" or ""."""

    text: str
    tone: str = ""
    right: bool = False
    bold: bool = False


#: A row as the subclasses build it: its key and one Cell per column, in COLUMNS order.
Row = tuple[str, tuple[Cell, ...]]

#: Spaces each side of a cell, as DataTable's default `cell_padding`.
PADDING = 1


class _Frame(NamedTuple):
    """What every line of a frame is drawn with; when any of it changes, every kept line goes."""

    width: int
    scroll_x: int
    base: Style
    header: Style
    cursor: Style
    hover: Style
    layout: int
    tones: int


class KeyedTable(ScrollView, can_focus=True):
    """Base of the list panes. Subclasses set COLUMNS and TITLE and call `_apply` with their rows."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"keyed-table--header", "keyed-table--cursor", "keyed-table--hover"}
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
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home", "first", "First row", show=False),
        Binding("end,ctrl+end", "last", "Last row", show=False),
    ]

    #: (column key, label) pairs; the keys are what `_update_cells` and the tests use.
    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: Shown in the border; the pane name the lead reads.
    TITLE: ClassVar[str] = ""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._columns = [key for key, _ in self.COLUMNS]
        self._widths = [len(label) for _, label in self.COLUMNS]
        """Each column's content width: its widest label or cell so far (columns only grow, as DataTable's)."""
        self._keys: list[str] = []
        """Row keys in display order."""
        self._index: dict[str, int] = {}
        self._cells: dict[str, tuple[Cell, ...]] = {}
        self._selected: str | None = None
        self._cursor = 0
        self._hover: int | None = None
        """The row under the mouse, shown only until the keyboard moves the cursor (as DataTable's)."""
        self._lines: dict[str, dict[tuple[int, bool, bool], Strip]] = {}
        """Row key → its lines kept for this frame's `_Frame`, by (index, cursor on it, hover on it)."""
        self._header: Strip | None = None
        self._frame: _Frame | None = None
        self._layout = 0
        """Bumped when a column grows: every line changes."""
        self._unmeasured: set[tuple[str, int]] = set()
        """(row key, column) of the values not measured yet (`_measure`)."""
        self._tone_styles: dict[tuple[str, bool], Style | None] = {}
        self._tone_epoch = 0
        self.cell_updates = 0
        """How many cells were rewritten; the tests use it to prove nothing was rebuilt."""
        if self.TITLE:
            self.border_title = self.TITLE
        self.framed = use_framed_rows(self)
        """Whether the rows are framed once (the fence's `framed_rows`) rather than at every frame."""

    def on_mount(self) -> None:
        """Follow theme changes: a toned cell's colour comes from the theme.

        Subclasses must not call this (Textual runs each class's `on_mount` itself).
        """
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())
        self._set_virtual_size()

    # The public reading API (the panes' owners and the tests).

    @property
    def row_count(self) -> int:
        return len(self._keys)

    @property
    def row_keys(self) -> list[str]:
        """The row keys, top to bottom."""
        return list(self._keys)

    @property
    def cursor_row(self) -> int:
        """The index of the row under the cursor (0 when the table is empty)."""
        return self._cursor

    def get_row_index(self, key: str) -> int:
        """Where row `key` is shown now; KeyError if there is no such row."""
        return self._index[key]

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

    @property
    def selected_key(self) -> str | None:
        """The key of the row under the cursor, or None when the table is empty."""
        if not self._keys:
            return None
        return self._keys[min(max(self._cursor, 0), len(self._keys) - 1)]

    def keys_around(self, key: str) -> list[str]:
        """The keys of the rows just below and just above `key`'s (where the cursor goes next)."""
        row = self._index.get(key)
        if row is None:
            return []
        return [self._keys[i] for i in (row + 1, row - 1) if 0 <= i < len(self._keys)]

    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        """Put the cursor on row `row` (clamped), repaint the two rows, post the selection if it changed."""
        row = min(max(row, 0), max(len(self._keys) - 1, 0))
        if row != self._cursor:
            old, self._cursor = self._cursor, row
            self._refresh_row(old)
            self._refresh_row(row)
        if scroll:
            self._scroll_cursor_into_view(animate=animate)
        self._note_selection()

    # Diff updates.

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

    def _measure_soon(self) -> None:
        """Widen the columns for the new values when the table is next idle (before its next frame).

        As DataTable did: the values of a burst of updates (a sync, a re-sort, a sync) are measured
        once, as they are then, so a value nobody saw widens nothing.
        """
        if self._unmeasured:
            self.check_idle()

    def on_idle(self, _event: events.Idle) -> None:
        self._measure()

    def _measure(self) -> None:
        """Widen each column to fit its new values; if one grew, every line changes.

        Columns never shrink (as DataTable's, which re-measured a whole column per narrower value:
        per changed cell, per tick, quadratic in the number of lanes).
        """
        if not self._unmeasured:
            return
        grew = False
        console = self.app.console
        for key, column in self._unmeasured:
            cells = self._cells.get(key)
            if cells is not None and (width := text_width(cells[column].text, console)) > self._widths[column]:
                self._widths[column] = width
                grew = True
        self._unmeasured.clear()
        if grew:
            self._layout += 1
            self._set_virtual_size()
            self.refresh()

    def _set_virtual_size(self) -> None:
        size = Size(sum(width + 2 * PADDING for width in self._widths), len(self._keys) + 1)
        if size != self.virtual_size:
            self.virtual_size = size

    def _restyle(self) -> None:
        """A new theme: toned cells take its colours (every line is built again)."""
        self._tone_styles.clear()
        self._tone_epoch += 1
        self.refresh()

    def _tone(self, cell: Cell) -> Style | None:
        if not (cell.tone or cell.bold):
            return None
        key = (cell.tone, cell.bold)
        if key not in self._tone_styles:
            style = tone_style(self.app, cell.tone, bold=cell.bold)
            self._tone_styles[key] = style or None
        return self._tone_styles[key]

    # Drawing.

    def render_lines(self, crop: Region) -> list[Strip]:
        """Work out the frame's styles once, not once a line; kept lines go when they changed."""
        self._measure()  # (a frame before the idle that measures: no value is drawn cut)
        self._frame_styles()
        return super().render_lines(crop)

    def _frame_styles(self) -> _Frame:
        frame = _Frame(self.size.width, round(self.scroll_offset.x), self.rich_style,
                       self.get_component_styles("keyed-table--header").rich_style,
                       self.get_component_rich_style("keyed-table--cursor"),
                       self.get_component_rich_style("keyed-table--hover"), self._layout, self._tone_epoch)
        if frame != self._frame:
            self._frame, self._header = frame, None
            self._lines.clear()
        return frame

    def render_line(self, y: int) -> Strip:
        """Line `y` of the view: the header on top, then the rows from the scroll position down."""
        frame = self._frame if self._frame is not None else self._frame_styles()
        if y == 0:
            if self._header is None:
                self._header = self._line(-1, [Cell(label) for _, label in self.COLUMNS], False, False, frame)
            return self._header
        index = y - 1 + round(self.scroll_offset.y)
        if not 0 <= index < len(self._keys):
            return Strip.blank(frame.width, frame.base)
        key = self._keys[index]
        state = (index, index == self._cursor, index == self._hover)
        kept = self._lines.setdefault(key, {})
        strip = kept.get(state)
        if strip is None:
            strip = self._build_row(key, *state, frame)
            if len(kept) >= 2:  # with and without the cursor: a move away and back finds both
                del kept[next(iter(kept))]
            kept[state] = strip
        return strip

    def _build_row(self, key: str, index: int, cursor: bool, hover: bool, frame: _Frame) -> Strip:
        """Row `key`'s line (the tests spy on this: a line built is a line that changed)."""
        return self._line(index, self._cells[key], cursor, hover, frame)

    def _line(self, index: int, cells: Sequence[Cell], cursor: bool, hover: bool, frame: _Frame) -> Strip:
        """One line as DataTable draws it with a row cursor: its cells, then the row's style to the edge."""
        row_style = frame.header if index < 0 else frame.base
        component = Style()
        if hover:
            component += frame.hover
        if cursor:
            component += frame.cursor
        post = Style.from_color(color=component.color)
        console, options = self.app.console, self.app.console_options
        segments: list[Segment] = []
        header = index < 0
        for column, (cell, width) in enumerate(zip(cells, self._widths, strict=True)):
            pre = row_style + Style.from_meta({"row": index, "column": column}) + component
            segments += cell_segments(cell.text, width + 2 * PADDING, PADDING, pre, post,
                                      None if header else self._tone(cell), cell.right, console, options)
        used = sum(width + 2 * PADDING for width in self._widths)
        if frame.width > used:
            extend = row_style + component + Style.from_meta({"row": index, "column": 0, "out_of_bounds": True})
            segments.append(Segment(" " * (frame.width - used), extend))
        strip = Strip(segments, max(used, frame.width))
        if frame.scroll_x or used > frame.width:
            strip = strip.crop(frame.scroll_x, frame.scroll_x + frame.width)
        return strip.adjust_cell_length(frame.width, frame.base).simplify()

    def _refresh_row(self, index: int) -> None:
        """Repaint row `index`'s line if it is in view (a row outside the window is not repainted)."""
        y = index + 1 - round(self.scroll_offset.y)
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        if not self.size.height:  # not laid out yet: once it is
            self.call_after_refresh(self._scroll_cursor_into_view)
            return
        region = Region(round(self.scroll_offset.x), self._cursor + 1, self.size.width, 1)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(1, 0, 0, 0), force=True)

    # Keys and the mouse.

    def action_cursor_up(self) -> None:
        self._set_hover(None)
        self.move_cursor(row=self._cursor - 1)

    def action_cursor_down(self) -> None:
        self._set_hover(None)
        self.move_cursor(row=self._cursor + 1)

    def action_page_down(self) -> None:
        """A page down, the cursor a page further (as DataTable's)."""
        self._set_hover(None)
        height = self.scrollable_content_region.height - 1
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=self._cursor + height, scroll=False)

    def action_page_up(self) -> None:
        self._set_hover(None)
        height = self.scrollable_content_region.height - 1
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=self._cursor - height, scroll=False)

    def action_first(self) -> None:
        self._set_hover(None)
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self._set_hover(None)
        self.move_cursor(row=len(self._keys) - 1)

    def _row_at(self, event: events.MouseEvent) -> int | None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return None
        index = offset.y - 1 + round(self.scroll_offset.y)
        return index if 0 <= index < len(self._keys) else None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self._row_at(event))

    def on_leave(self, _event: events.Leave) -> None:
        self._set_hover(None)

    def on_click(self, event: events.Click) -> None:
        """A click selects the row under the mouse."""
        row = self._row_at(event)
        if row is not None:
            event.stop()
            self.move_cursor(row=row)

    def _set_hover(self, row: int | None) -> None:
        if row != self._hover:
            old, self._hover = self._hover, row
            for index in (old, row):
                if index is not None:
                    self._refresh_row(index)

    def _note_selection(self) -> None:
        """Post the selection message if the row under the cursor is a different key than last time."""
        key = self.selected_key
        if key != self._selected:
            self._selected = key
            self._selection_changed(key)

    def _selection_changed(self, key: str | None) -> None:
        """Subclasses post their message here."""
