"""A `Log` written a batch at a time and rendered with its frame's style, view and framed rows worked out
once. Off (`checks.enabled("log")` false), it is Textual's `Log`: `write`, `clear`, its own rendering.

What each part replaces, and why (docs/benchmarks.md, B1 and B2):
- `write_batch`: `Log.write` refreshes the widget and measures the width once per line, which made
  showing a 2,000-line tail cost 25-30 ms on the frame after a key-press; old lines are cut in chunks
  (past `max_lines` by a `1/PRUNE_SLACK` share) rather than at every batch;
- `forget_lines`: `Log.clear` without its `virtual_size = Size(0, 0)`, a layout reactive (12 ms at 100
  lanes at every lane switch);
- `grow_virtual_size`: the scroll range set without a layout pass of the whole screen (two thirds of the
  dashboard's CPU over printing lanes);
- `render_lines` / `_render_line` / `_render_line_strip`: the frame's style and view looked up once, a
  line kept while only its place changes, a line of one-cell characters built directly (Log walks every
  ancestor's styles for every line, and fills its per-line cache only while text is selected);
- `_scroll_update`: a hidden scrollbar thumb (`thumb_hidden`) is not repainted at every batch;
- the rows framed once (`framed_rows`, its own switch).
`tests/test_framed_rows.py`, `tests/test_plain_cell.py`, `tests/test_widgets_output.py` hold it equal to Log.
"""

from __future__ import annotations

import re
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.selection import Selection
from textual.strip import Strip
from textual.widgets import Log

from lanes_tui.fast.checks import enabled
from lanes_tui.fast.plain_cell import one_cell_each

__all__ = ["PRUNE_SLACK", "FastLog"]

#: Old lines go in chunks: past `max_lines` by a `1/PRUNE_SLACK` share, the tail is cut back to
#: `max_lines`. Cutting on every batch shifted the whole line cache at every frame of a busy lane.
PRUNE_SLACK = 8
#: Lines kept as made by `_render_line`, the oldest dropped first: a view's worth and plenty to spare.
SHOWN_LINES = 256
#: What makes a line's width differ from its length in ASCII: control characters (a tab expands, the
#: rest show as one cell or none). Text without them (and ASCII) is measured by `len`, in C.
_NOT_ONE_CELL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


class FastLog(Log):
    """`Log` with `write_batch`, `forget_lines` and `settle_size`, and a cheaper frame."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fast = enabled("log")
        """Whether this log takes the fast paths (decided once, at construction)."""
        self._frame_style: Style | None = None
        self._frame_view: tuple[int, int, int, Selection | None] | None = None
        """Scroll x, scroll y, width and text selection, for the frame being rendered (see `render_lines`)."""
        self._shown: dict[int, tuple[str, tuple[int, int, Style], Strip]] = {}
        """Line number -> (its text, (scroll x, width, style), its strip): see `_render_line`."""
        if enabled("framed_rows"):
            from lanes_tui.fast.framed_rows import FramedRowsCache

            self._styles_cache = FramedRowsCache()  # a row that scrolled up is not framed again (see there)

    def thumb_hidden(self) -> bool:
        """Whether the vertical scrollbar is hidden now (a subclass says; then it is not repainted)."""
        return False

    def _scroll_update(self, virtual_size: Size) -> None:
        """ScrollView's, but a hidden thumb is left alone (see `thumb_hidden`)."""
        if not self.fast or not self.thumb_hidden():
            super()._scroll_update(virtual_size)
            return
        self._refresh_scrollbars()  # a scrollbar that must appear or go still does
        self.scroll_x = self.validate_scroll_x(self.scroll_x)
        self.scroll_y = self.validate_scroll_y(self.scroll_y)

    def forget_lines(self) -> None:
        """Empty the log. Fast: `Log.clear` without its `virtual_size = Size(0, 0)`: that is a layout
        reactive, so every lane switch laid out the whole screen (12 ms at 100 lanes, B1); `settle_size`
        sets the new size."""
        if not self.fast:
            self.clear()
            return
        self._lines.clear()
        self._width = 0
        self._render_line_cache.clear()
        self._updates += 1
        self._clear_y = 0
        self.refresh()

    def settle_size(self) -> None:
        """Make the scroll range the lines' (after `forget_lines` and `write_batch`; stock: `write` did)."""
        if self.fast:
            self.grow_virtual_size(Size(self._width, self.line_count))

    def write_batch(self, text: str, *, scroll_end: bool) -> None:
        """`Log.write` for many lines at once: the same lines, one width update, one refresh.

        The last line stays open (a chunk may end mid-line), as with `Log.write`. Uses the Log's
        own fields (`_lines`, `_width`, `_prune_max_lines`) since Log offers no batched write that
        keeps the last line open (`write_lines` closes it).
        """
        if not text:
            return
        if not self.fast:
            self.write(text, scroll_end=scroll_end)
            return
        lines = self._lines
        if not lines:
            lines.append("")
        first = len(lines) - 1
        parts = text.split("\n")
        lines[-1] += parts[0]
        lines.extend(parts[1:])
        self._width = max(self._width, _widest(lines[first:], text))
        pruned = self.max_lines is not None and len(lines) > self.max_lines + self.max_lines // PRUNE_SLACK
        if pruned:
            self._prune_max_lines()
        self.grow_virtual_size(Size(self._width, self.line_count))
        if pruned or first == 0:  # every line moved up, or all are new: the whole view is new
            self.refresh()
        else:
            self.refresh_lines(first, len(lines) - first)
        if scroll_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def render_lines(self, crop: Region) -> list[Strip]:
        """Render a frame's lines with the pane's style, scroll offset and width worked out once for the frame.

        `Log` asks for `rich_style` on every line, and that walks every ancestor's styles each time:
        with the view scrolling as a lane prints, that walk was half the cost of a frame. The scroll
        offset and the width are reactive reads and a walk up to the screen, on every line too.
        """
        if not self.fast:
            return super().render_lines(crop)
        self._frame_style = self.rich_style
        self._frame_view = (*self.scroll_offset, self.size.width, self.text_selection)
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None
            self._frame_view = None

    def render_line(self, y: int) -> Strip:
        """`Log.render_line`, with the frame's scroll offset and width (see `render_lines`)."""
        if self._frame_view is None:
            return super().render_line(y)
        scroll_x, scroll_y, width, _ = self._frame_view
        return self._render_line(scroll_y + y, scroll_x, width)

    def _render_line(self, y: int, scroll_x: int, width: int) -> Strip:
        """`Log._render_line`, with the frame's style (see `render_lines`), kept for the next frame.

        A line is kept with its text and the view it was cut for, so a line that only moved up the
        pane is not made again. A line of one-cell characters that fits the width and is not
        scrolled sideways is made in one step (`_fitted_line`): Log's way makes three strips for it
        (the line, widened, with offsets), and a strip is 15 objects for the garbage collector.
        """
        if not self.fast:
            return super()._render_line(y, scroll_x, width)
        rich_style = self._frame_style or self.rich_style
        if y >= len(self._lines):
            return Strip.blank(width, rich_style)
        if (self._frame_view[3] if self._frame_view is not None else self.text_selection) is not None:
            return self._log_line(y, scroll_x, width, rich_style)  # highlighted: not kept
        text = self._lines[y]
        view = (scroll_x, width, rich_style)
        shown = self._shown.get(y)
        if shown is not None and shown[0] is text and shown[1] == view:
            return shown[2]
        if scroll_x == 0 and len(text) <= width and one_cell_each(text):
            strip = _fitted_line(text, y, width, rich_style)
        else:
            strip = self._log_line(y, scroll_x, width, rich_style)
        self._shown[y] = (text, view, strip)
        if len(self._shown) > SHOWN_LINES:
            del self._shown[next(iter(self._shown))]  # the line shown longest ago
        return strip

    def _log_line(self, y: int, scroll_x: int, width: int, rich_style: Style) -> Strip:
        """Line `y` cut to the view as `Log._render_line` cuts it."""
        line = self._render_line_strip(y, rich_style)
        return line.crop_extend(scroll_x, scroll_x + width, rich_style).apply_offsets(scroll_x, y)

    def _render_line_strip(self, y: int, rich_style: Style) -> Strip:
        """`Log._render_line_strip`, kept in the Log's own per-line cache.

        Log reads that cache but (Textual 8.2) only fills it while text is selected, so every line
        on screen was rendered again at every frame. The cache is emptied where Log empties it
        (style updates, `clear`, `refresh_lines`) and shifted when old lines are pruned. A line of
        one-cell characters (nearly every line an agent prints) is built as the strip Log would make,
        without a Rich `Text` (a third of a new lane's first frame; `tests/test_plain_cell.py`).
        """
        if not self.fast or self.text_selection is not None:
            return super()._render_line_strip(y, rich_style)
        cache = self._render_line_cache
        strip = cache.get(y)
        if strip is None:
            line = self._lines[y]
            if one_cell_each(line):  # nothing for Log to replace or measure: its strip, built directly
                strip = Strip([Segment(line, rich_style)] if line else [Segment("")], len(line))  # as Log makes it
            else:
                strip = super()._render_line_strip(y, rich_style)
            cache[y] = strip
        return strip

    def grow_virtual_size(self, size: Size) -> None:
        """Set the scroll range without a layout pass of the whole screen.

        `virtual_size` is a layout reactive: assigning it re-arranges every widget on the screen and
        repaints this pane's whole region, twice a second while a lane prints (two thirds of the
        dashboard's CPU over printing lanes, docs/benchmarks.md B2). A scroll view keeps its own
        virtual size (the compositor never reads it back), so only the scrollbars need telling;
        `_scroll_update` does that, and it still asks for a layout when a scrollbar appears or goes.
        Stock: the reactive is assigned.
        """
        if size == self.virtual_size:
            return
        if not self.fast or not self.is_mounted or not self.container_size:
            self.virtual_size = size
            return
        self.set_reactive(FastLog.virtual_size, size)
        self._scroll_update(size)


def _fitted_line(text: str, y: int, width: int, style: Style) -> Strip:
    """Line `y` of one-cell characters, no wider than `width` and not scrolled sideways, as Log shows it.

    The same segments as `Strip([Segment(text, style)]).crop_extend(0, width, style).apply_offsets(0, y)`
    (`tests/test_framed_rows.py` compares them): the text, the spaces that fill the width, each with
    the offset Textual's text selection reads.
    """
    def at(x: int) -> Style:
        offset = Style.from_meta({"offset": (x, y)})
        return style + offset if style else offset

    # Log gives an empty line one empty segment with no style of its own: only the offset.
    segments = [Segment(text, at(0)) if text else Segment("", Style.from_meta({"offset": (0, y)}))]
    if len(text) < width:
        segments.append(Segment(" " * (width - len(text)), at(len(text))))
    return Strip(segments, width)


def _widest(lines: list[str], text: str) -> int:
    """The widest of `lines` in cells, as `Log` measures a line (`_process_line`, then `cell_len`).

    `text` is what was just added to them: when it and the first line (which may have begun before)
    are ASCII without control characters, every line's width is its length, measured in C; else each
    line is processed and measured (2,000 lines of a tail cost ~20 ms that way, on the key-press path).
    """
    if text.isascii() and lines[0].isascii() and not _NOT_ONE_CELL.search(text) and not _NOT_ONE_CELL.search(lines[0]):
        return max(map(len, lines))
    process = Log._process_line
    return max(cell_len(process(line)) for line in lines)
