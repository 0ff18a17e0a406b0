"""The list panes' view on Textual's public Line API: a header and one line per keyed row, a row cursor.

A `ScrollView` drawing in `render_line` (the header fixed on top, the rows from the scroll position
down). Each row's line is kept (a `Strip`, with and without the cursor on it) until its cells, the
column widths, the cursor or hover on it, the width, the horizontal scroll or the styles (focus,
theme) change: a meter tick of one lane builds that lane's line and refreshes that one line, a scroll
builds only the rows it brings in (docs/benchmarks.md, B1/B2). Columns only grow, measured when the
table is next idle (a value replaced within a burst of updates widens nothing, as with DataTable).
It looks as Textual's DataTable with a row cursor did, the same styles in the same segments
(`_row_lines`; the snapshots did not change), and keeps its keys: up/down, page up/down,
home/end (first/last row); a click selects a row. Only public Textual and Rich API; the fence
(`lanes_tui.fast`) only frames the rows (`framed_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size, Spacing
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBarRender
from textual.strip import Strip

from lanes_tui.fast.framed_rows import use_framed_rows
from lanes_tui.widgets._format import tone_style
from lanes_tui.widgets._row_lines import PADDING, Cell, Frame, row_line, text_width


class WholeCellBar(ScrollBarRender):
    """A scrollbar whose thumb is whole cells: no eighth blocks (`▉▊▋▌▍▎▏`, `▁▂▃▄▅▆▇`) at its ends.

    Those glyphs are the thumb's colour on the track's; where the two colours come out alike (tmux's
    256 colours) the thumb vanishes and the glyph stays, a stray mark under or beside the table.
    """

    HORIZONTAL_BARS: ClassVar[list[str]] = [" "] * 8
    VERTICAL_BARS: ClassVar[list[str]] = [" "] * 8


class KeyedView(ScrollView, can_focus=True):
    """Rows of `Cell`s under COLUMNS' labels, keyed; `KeyedTable` (its subclass) diff-updates them."""

    DEFAULT_CSS = """
    KeyedView.-short {
        overflow-x: hidden;
    }
    """
    """`-short`: no row would show above a horizontal scrollbar (`on_resize`), so it gets none."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"keyed-table--header", "keyed-table--cursor", "keyed-table--hover"}
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

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._columns = [key for key, _ in self.COLUMNS]
        self._widths = [len(label) for _, label in self.COLUMNS]
        """Each column's content width: its widest label or value so far."""
        self._shown = list(range(len(self._columns)))
        """The columns drawn, by index (`show_columns`): a narrow screen keeps the ones read first."""
        self._keys: list[str] = []
        """Row keys in display order."""
        self._index: dict[str, int] = {}
        self._cells: dict[str, tuple[Cell, ...]] = {}
        self._selected: str | None = None
        self._cursor = 0
        self._hover: int | None = None
        """The row under the mouse, shown until the keyboard moves the cursor (as DataTable's)."""
        self._lines: dict[str, dict[tuple[int, bool, bool], Strip]] = {}
        """Row key → its lines kept for this `Frame`, by (index, cursor on it, hover on it)."""
        self._header: Strip | None = None
        self._frame: Frame | None = None
        self._layout = 0
        """Bumped when a column grows: every line changes."""
        self._unmeasured: set[tuple[str, int]] = set()
        """(row key, column) of the values not measured yet (`_measure`)."""
        self._tone_styles: dict[tuple[str, bool], Style | None] = {}
        self._tone_epoch = 0
        self.framed_rows = use_framed_rows(self)
        """Whether the rows are framed once (the fence's `framed_rows`) rather than at every frame."""

    def on_mount(self) -> None:
        """Follow theme changes: a toned cell's colour comes from the theme.

        Subclasses must not call this (Textual runs each class's `on_mount` itself).
        """
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())
        # Per instance, as `ScrollBar.renderer`'s docstring shows (typed a ClassVar all the same).
        self.horizontal_scrollbar.renderer = WholeCellBar  # type: ignore[misc]
        self.vertical_scrollbar.renderer = WholeCellBar  # type: ignore[misc]
        self._set_virtual_size()

    def on_resize(self, _event: events.Resize) -> None:
        """Below the header, one row and a scrollbar, the scrollbar would take the only row's line."""
        self.set_class(self.size.height < 3, "-short")

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

    @property
    def selected_key(self) -> str | None:
        """The key of the row under the cursor, or None when the table is empty."""
        if not self._keys:
            return None
        return self._keys[min(max(self._cursor, 0), len(self._keys) - 1)]

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

    @property
    def shown_columns(self) -> list[str]:
        """The keys of the columns drawn, left to right."""
        return [self._columns[i] for i in self._shown]

    def show_columns(self, keys: Sequence[str] | None) -> None:
        """Draw only these columns (None: all), in COLUMNS order; the others keep their values.

        For a narrow terminal: a column cut at the right edge is worse than one not drawn (the lead
        read `accep` for `accepted`). Changing the set rebuilds every line once, like a column growing.
        """
        wanted = set(self._columns if keys is None else keys)
        shown = [i for i, key in enumerate(self._columns) if key in wanted]
        if shown != self._shown:
            self._shown = shown
            self._layout += 1
            self._set_virtual_size()
            self.refresh()

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
        size = Size(sum(self._widths[i] + 2 * PADDING for i in self._shown), len(self._keys) + 1)
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

    def render_lines(self, crop: Region) -> list[Strip]:
        """Work out the frame's styles once, not once a line; kept lines go when they changed."""
        self._measure()  # (a frame before the idle that measures: no value is drawn cut)
        self._frame_styles()
        return super().render_lines(crop)

    def _frame_styles(self) -> Frame:
        frame = Frame(self.size.width, round(self.scroll_offset.x), self.rich_style,
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

    def _build_row(self, key: str, index: int, cursor: bool, hover: bool, frame: Frame) -> Strip:
        """Row `key`'s line (the tests spy on this: a line built is a line that changed)."""
        return self._line(index, self._cells[key], cursor, hover, frame)

    def _line(self, index: int, cells: Sequence[Cell], cursor: bool, hover: bool, frame: Frame) -> Strip:
        toned = [(cells[i], None if index < 0 else self._tone(cells[i])) for i in self._shown]
        widths = [self._widths[i] for i in self._shown]
        return row_line(index, toned, widths, cursor, hover, frame, self.app.console, self.app.console_options)

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
