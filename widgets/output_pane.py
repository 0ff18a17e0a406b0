"""The Output pane: a bounded, following tail of the selected lane's output.

A `Log` (plain text, much cheaper than RichLog for a firehose), written a batch at a time: `Log.write`
refreshes the widget and measures the width once per line, which made showing a 2,000-line tail
cost 25-30 ms on the frame after a key-press (docs/benchmarks.md, B1). It keeps the last
`max_lines` lines (up to an eighth more between cuts), follows new output only while the view is at
the bottom (so the lead can scroll up and read while the agent keeps printing), and strips ANSI
escapes and control characters: agent output must not be able to move the cursor or recolour the
dashboard.

A structured lane (claude, codex, gemini: one JSON object a line, several KB each) is shown readable
by default: the engine's `ReadableStream` turns each line into the conversation it stands for as it
arrives (text, `→ tool: input`, `  ⎿ result`, questions, errors, usage); every other line passes as
it is. `readable = False` shows the raw lines (the `w` key; the title says which). Only what the pane
is given is rendered (the tail, then each new chunk), never the whole log.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.reactive import var
from textual.selection import Selection
from textual.strip import Strip
from textual.widgets import Log

from lanes_tui.widgets._format import clean_text
from lanes_tui.widgets._framed_rows import FramedRowsCache
from lanes_tui.widgets._plain_cell import one_cell_each

if TYPE_CHECKING:
    from lanes_tui.engine import ReadableStream

MAX_LINES = 2000
#: Old lines go in chunks: past `max_lines` by a `1/PRUNE_SLACK` share, the tail is cut back to
#: `max_lines`. Cutting on every batch shifted the whole line cache at every frame of a busy lane.
PRUNE_SLACK = 8
#: Lines kept as made by `_render_line`, the oldest dropped first: a view's worth and plenty to spare.
SHOWN_LINES = 256
#: A line longer than this is broken: an agent printing without newlines must not grow one line forever.
MAX_LINE_CHARS = 4000
#: What makes a line's width differ from its length in ASCII: control characters (a tab expands, the
#: rest show as one cell or none). Text without them (and ASCII) is measured by `len`, in C.
_NOT_ONE_CELL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


class OutputPane(Log):
    """Shows one lane's output; `show` replaces it, `append` adds to it if it is the lane shown."""

    DEFAULT_CSS = """
    OutputPane {
        height: 1fr;
        border: round $panel;
        border-title-color: $text-muted;
        padding: 0 1;
        scrollbar-gutter: stable;
    }
    OutputPane.-tail {
        scrollbar-visibility: hidden;
    }
    OutputPane:focus {
        border: round $primary;
        border-title-color: $primary;
    }
    """

    readable: var[bool] = var(True, init=False)
    """Structured output as a conversation (True) or as its raw JSON lines; `show` applies a change."""

    def __init__(self, *, max_lines: int = MAX_LINES, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(highlight=False, max_lines=max_lines, auto_scroll=False, name=name, id=id, classes=classes)
        self.lane_id: str | None = None
        """The lane whose output is shown; `append` for any other lane is ignored."""
        self._partial = 0  # characters on the current (unterminated) last line
        self._frame_style: Style | None = None
        self._frame_view: tuple[int, int, int, Selection | None] | None = None
        """Scroll x, scroll y, width and text selection, for the frame being rendered (see `render_lines`)."""
        self._shown: dict[int, tuple[str, tuple[int, int, Style], Strip]] = {}
        """Line number -> (its text, (scroll x, width, style), its strip): see `_render_line`."""
        self._styles_cache = FramedRowsCache()  # a row that scrolled up is not framed again (see there)
        self._stream: ReadableStream | None = None
        """The shown lane's output made readable as it comes (None while raw lines are shown)."""
        self.border_title = "Output"

    @property
    def following(self) -> bool:
        """True while the view is at the bottom, i.e. new output scrolls into view."""
        return self.is_vertical_scroll_end

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Hide the scrollbar while the view follows the tail; show it once the lead scrolls up.

        At the tail the thumb only ever says "at the end", and repainting it on every batch cost
        as much as the lines themselves (its gutter stays reserved, so no text moves). A hidden
        scrollbar is not touched either: a repaint of a widget off the screen makes Textual map the
        whole screen again.
        """
        tail = self.is_vertical_scroll_end
        if tail and self.has_class("-tail"):
            if round(old_value) != round(new_value):
                self.refresh(self.size.region)
            return
        self.set_class(tail, "-tail")
        super().watch_scroll_y(old_value, new_value)  # shown again, the thumb is laid out afresh

    def _scroll_update(self, virtual_size: Size) -> None:
        """ScrollView's, but a hidden thumb is left alone (see `watch_scroll_y`)."""
        if not self.has_class("-tail"):
            super()._scroll_update(virtual_size)
            return
        self._refresh_scrollbars()  # a scrollbar that must appear or go still does
        self.scroll_x = self.validate_scroll_x(self.scroll_x)
        self.scroll_y = self.validate_scroll_y(self.scroll_y)

    def show(self, lane_id: str | None, text: str) -> None:
        """Replace the pane with `lane_id`'s output (only its last `max_lines` lines are kept)."""
        self.lane_id = lane_id
        self._forget_lines()
        self._partial = 0
        limit = self.max_lines or MAX_LINES
        tail = text[-limit * 200:] if len(text) > limit * 200 else text  # cheap cut before splitting
        self._stream = None
        if self.readable and lane_id is not None:
            from lanes_tui.engine import ReadableStream  # here: importing the widgets loads no engine module

            # The tail may begin mid-line (it is the end of the log): a torn JSON line is dropped.
            self._stream = ReadableStream(width=self._wrap_width(), cut_head=True)
            tail = self._stream.feed(tail) + "".join(f"{line}\n" for line in self._stream.readable.flush())
        self._title()
        lines = tail.split("\n")
        if len(lines) > limit + 1:
            tail = "\n".join(lines[-(limit + 1):])
        self._write_batch(self._guard(clean_text(tail)), scroll_end=True)
        self._grow_virtual_size(Size(self._width, self.line_count))  # an empty tail: the old lane's range goes

    def _wrap_width(self) -> int:
        """The width the agent's text is wrapped to: the pane's, less its gutter (0: not laid out yet)."""
        width = self.scrollable_content_region.width - 1
        return width if width >= 20 else 0

    def _title(self) -> None:
        """`Output · lane`, and `· readable` once structured lines were made readable, or `· raw`."""
        if not self.lane_id:
            self.border_title = "Output"
        elif not self.readable:
            self.border_title = f"Output · {self.lane_id} · raw"
        elif self._stream is not None and self._stream.structured:
            self.border_title = f"Output · {self.lane_id} · readable"
        else:
            self.border_title = f"Output · {self.lane_id}"

    def _forget_lines(self) -> None:
        """`Log.clear` without its `virtual_size = Size(0, 0)`: that is a layout reactive, so every lane
        switch laid out the whole screen (12 ms at 100 lanes, B1); `_write_batch` sets the new size."""
        self._lines.clear()
        self._width = 0
        self._render_line_cache.clear()
        self._updates += 1
        self._clear_y = 0
        self.refresh()

    def append(self, lane_id: str, text: str) -> bool:
        """Add output of `lane_id` if it is the lane shown; returns whether it was shown."""
        if lane_id != self.lane_id or not text:
            return False
        if self._stream is not None:
            structured = self._stream.structured
            text = self._stream.feed(text)
            if self._stream.structured != structured:
                self._title()
            if not text:  # a JSON line not whole yet, or one that shows nothing (a streamed piece)
                return True
        follow = self.following
        self._write_batch(self._guard(clean_text(text)), scroll_end=follow)
        return True

    def _write_batch(self, text: str, *, scroll_end: bool) -> None:
        """`Log.write` for many lines at once: the same lines, one width update, one refresh.

        The last line stays open (a chunk may end mid-line), as with `Log.write`. Uses the Log's
        own fields (`_lines`, `_width`, `_prune_max_lines`) since Log offers no batched write that
        keeps the last line open (`write_lines` closes it).
        """
        if not text:
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
        self._grow_virtual_size(Size(self._width, self.line_count))
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
        if self.text_selection is not None:
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

    def _grow_virtual_size(self, size: Size) -> None:
        """Set the scroll range without a layout pass of the whole screen.

        `virtual_size` is a layout reactive: assigning it re-arranges every widget on the screen and
        repaints this pane's whole region, twice a second while a lane prints (two thirds of the
        dashboard's CPU over printing lanes, docs/benchmarks.md B2). A scroll view keeps its own
        virtual size (the compositor never reads it back), so only the scrollbars need telling;
        `_scroll_update` does that, and it still asks for a layout when a scrollbar appears or goes.
        """
        if size == self.virtual_size:
            return
        if not self.is_mounted or not self.container_size:
            self.virtual_size = size
            return
        self.set_reactive(OutputPane.virtual_size, size)
        self._scroll_update(size)

    def _guard(self, text: str) -> str:
        """Break lines longer than MAX_LINE_CHARS, counting the unterminated line across calls."""
        parts = text.split("\n")
        if self._partial + len(parts[0]) <= MAX_LINE_CHARS and max(map(len, parts[1:]), default=0) <= MAX_LINE_CHARS:
            # Nothing to break (the usual case): a lane's whole 64 KiB tail in one C-speed pass.
            self._partial = self._partial + len(parts[0]) if len(parts) == 1 else len(parts[-1])
            return text
        out: list[str] = []
        for i, part in enumerate(text.split("\n")):
            if i:
                out.append("\n")
                self._partial = 0
            while self._partial + len(part) > MAX_LINE_CHARS:
                take = MAX_LINE_CHARS - self._partial
                out.append(part[:take])
                out.append("\n")
                part = part[take:]
                self._partial = 0
            out.append(part)
            self._partial += len(part)
        return "".join(out)


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
