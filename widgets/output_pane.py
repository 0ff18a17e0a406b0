"""The Output pane: a bounded, following tail of the selected lane's output.

Built on Textual's public Line API (a `ScrollView` whose `render_line` hands out one strip a line), not
on `Log`: the pane keeps the last `max_lines` lines (up to an eighth more between cuts), follows new
output only while the view is at the bottom (so the lead can scroll up and read while the agent keeps
printing), and strips ANSI escapes and control characters: agent output must not be able to move the
cursor or recolour the dashboard.

What `Log` cost, and what is done instead (docs/benchmarks.md, B1 and B2):
- a chunk is added in one step: one width measure (in C for ASCII), one scroll range, one refresh
  (`Log.write` refreshed and measured once per line: a 2,000-line tail cost 25-30 ms on the key-press);
- the scroll range is set without a layout of the whole screen (`set_reactive`, then the shown
  scrollbars told directly) unless a scrollbar may appear or go; `virtual_size` is a layout reactive,
  and laying the screen out twice a second while a lane prints was two thirds of the dashboard's CPU;
- a line is drawn once and kept while its text and the view stay (`_strip`): a chunk that scrolls the
  view draws only its new lines, and each kept strip is the same object, so the fence's framed rows
  (`lanes_tui.fast.framed_rows`) find the framed row again; the frame's style and view are looked up
  once a frame (`render_lines`), not once a line;
- at the tail the scrollbar is hidden (`-tail`) and left alone: its thumb only ever says "at the end".

A structured lane (claude, codex, gemini: one JSON object a line, several KB each) is shown readable
by default: the engine's `ReadableStream` turns each line into the conversation it stands for as it
arrives (text, `→ tool: input`, `  ⎿ result`, questions, errors, usage); every other line passes as
it is. `readable = False` shows the raw lines (the `w` key; the title says which). Only what the pane
is given is rendered (the tail, then each new chunk), never the whole log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.style import Style
from textual.geometry import Region, Size
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from lanes_tui.fast.framed_rows import use_framed_rows
from lanes_tui.widgets._format import clean_text
from lanes_tui.widgets._output_lines import line_strip, selected_line, widest

if TYPE_CHECKING:
    from lanes_tui.engine import ReadableStream

MAX_LINES = 2000
#: A line longer than this is broken: an agent printing without newlines must not grow one line forever.
MAX_LINE_CHARS = 4000
#: Old lines go in chunks: past `max_lines` by a `1/PRUNE_SLACK` share, the tail is cut back to
#: `max_lines`. Cutting on every chunk would shift every line under the view at every frame of a busy lane.
PRUNE_SLACK = 8
#: Lines kept as drawn (`_strip`), the oldest dropped first: a view's worth and plenty to spare.
SHOWN_LINES = 256

_View = tuple[int, int, Style]
"""What a drawn line depends on besides its text and number: scroll x, width, style."""


class OutputPane(ScrollView, can_focus=True):
    """Shows one lane's output; `show` replaces it, `append` adds to it if it is the lane shown."""

    ALLOW_SELECT = True
    DEFAULT_CLASSES = "-tail"
    """A new pane is at its end (nothing to scroll yet), so its scrollbars start hidden: shown while nothing
    scrolled, their empty tracks were a dark column and row at the pane's edges (`$scrollbar-background`),
    left on the screen, as a lead saw it, where a notification had been (issue 32)."""
    DEFAULT_CSS = """
    OutputPane {
        background: $surface;
        color: $text;
        overflow: scroll;
        height: 1fr;
        border: round $panel;
        border-title-color: $text-muted;
        padding: 0 1;
        scrollbar-gutter: stable;
        &:focus {
            background-tint: $foreground 5%;
        }
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
        super().__init__(name=name, id=id, classes=classes)
        self.max_lines = max_lines
        """Lines kept (up to a `1/PRUNE_SLACK` share more between cuts)."""
        self.lane_id: str | None = None
        """The lane whose output is shown; `append` for any other lane is ignored."""
        self._text_lines: list[str] = []
        """The lines shown; the last one is open (a chunk may end mid-line), "" after a newline."""
        self._text_width = 0
        """The widest line ever shown since `show`, in cells: the scroll range's width."""
        self._partial = 0  # characters on the current (unterminated) last line
        self._stream: ReadableStream | None = None
        """The shown lane's output made readable as it comes (None while raw lines are shown)."""
        self._drawn: dict[int, tuple[str, _View, Strip]] = {}
        """Line number -> (its text, the view it was cut for, its strip): see `_strip`."""
        self._frame_view: tuple[Style, int, int, int, Selection | None] | None = None
        """Style, scroll x, scroll y, width and text selection of the frame being rendered (`render_lines`)."""
        self.framed_rows = use_framed_rows(self)
        """Whether the fence frames this pane's rows once (its `framed_rows` path is on)."""
        self.border_title = "Output"

    # --- what the tests and the app read --------------------------------------------------------------
    @property
    def lines(self) -> Sequence[str]:
        """The lines shown (read only); the last is "" when the output ended with a newline."""
        return self._text_lines

    @property
    def line_count(self) -> int:
        """Lines of content (an open empty last line does not count, as in `Log`)."""
        lines = self._text_lines
        return len(lines) - (lines[-1] == "") if lines else 0

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

    # --- the lane's output ----------------------------------------------------------------------------
    def show(self, lane_id: str | None, text: str) -> None:
        """Replace the pane with `lane_id`'s output (only its last `max_lines` lines are kept)."""
        self.lane_id = lane_id
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
        clean = self._guard(clean_text(tail))
        self._text_lines = clean.split("\n") if clean else []
        self._text_width = widest(self._text_lines, clean)
        self._drawn.clear()
        self._set_scroll_range()
        self.refresh()
        self.scroll_end(animate=False, immediate=True, x_axis=False)

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
        self._add(self._guard(clean_text(text)), scroll_end=follow)
        return True

    def _add(self, text: str, *, scroll_end: bool) -> None:
        """Add a chunk in one step: the open last line continued, new lines after it, one width measure,
        one scroll range, one refresh (of the lines from the open one on, or of all after a cut)."""
        if not text:
            return
        lines = self._text_lines
        if not lines:
            lines.append("")
        first = len(lines) - 1
        parts = text.split("\n")
        lines[-1] += parts[0]
        lines.extend(parts[1:])
        self._text_width = max(self._text_width, widest(lines[first:], text))
        limit = self.max_lines
        cut = len(lines) > limit + limit // PRUNE_SLACK
        if cut:
            del lines[:len(lines) - limit]
            self._drawn.clear()
        self._set_scroll_range()
        if cut or first == 0:  # every line moved up, or all are new: the whole view is new
            self.refresh()
        else:
            self.refresh_lines(first, len(lines) - first)
        if scroll_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def _set_scroll_range(self) -> None:
        """Make the scroll range the lines', without a layout of the whole screen unless one is needed.

        `virtual_size` is a layout reactive: assigning it re-arranges every widget on the screen and
        repaints this pane's whole region. A scroll view's range is its own (the compositor does not
        read it back), so it is set with `set_reactive` and the scrollbars that show are told; Textual
        lays the screen out only when a scrollbar may appear or go (overflow `auto`) or the pane is not
        laid out yet. At the tail the scrollbars are hidden and left alone (`watch_scroll_y`): shown
        again, they are laid out afresh.
        """
        size = Size(self._text_width, self.line_count)
        if size == self.virtual_size:
            return
        if not self.is_mounted or not self.container_size or self._scrollbars_may_change(size):
            self.virtual_size = size
            return
        self.set_reactive(OutputPane.virtual_size, size)
        if not self.has_class("-tail"):
            if self.show_vertical_scrollbar:
                self.vertical_scrollbar.window_virtual_size = size.height
            if self.show_horizontal_scrollbar:
                self.horizontal_scrollbar.window_virtual_size = size.width
        self.scroll_x = self.validate_scroll_x(self.scroll_x)
        self.scroll_y = self.validate_scroll_y(self.scroll_y)

    def _scrollbars_may_change(self, size: Size) -> bool:
        """Whether a scroll range of `size` may show or hide a scrollbar (then Textual lays it out). Erring
        towards yes: near the edge, the other scrollbar's room counts either way."""
        styles = self.styles
        width, height = self.container_size
        vertical, horizontal = self.show_vertical_scrollbar, self.show_horizontal_scrollbar
        if styles.overflow_y == "auto" and (size.height <= height if vertical else
                                            size.height > height - styles.scrollbar_size_horizontal):
            return True
        return styles.overflow_x == "auto" and (size.width <= width if horizontal else
                                                size.width > width - styles.scrollbar_size_vertical)

    # --- drawing --------------------------------------------------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        """Render a frame with the pane's style, scroll offset, width and selection looked up once.

        `rich_style` walks every ancestor's styles, and the scroll offset and size are reactive reads:
        once a line, that walk was half the cost of a frame while the view scrolled with a lane.
        """
        self._frame_view = (self.rich_style, *self.scroll_offset, self.size.width, self.text_selection)
        try:
            return super().render_lines(crop)
        finally:
            self._frame_view = None

    def render_line(self, y: int) -> Strip:
        """Row `y` of the view: the line under it, cut to the view (blank past the last line)."""
        frame = self._frame_view
        if frame is None:
            frame = (self.rich_style, *self.scroll_offset, self.size.width, self.text_selection)
        style, scroll_x, scroll_y, width, selection = frame
        index = scroll_y + y
        if index >= len(self._text_lines):
            return Strip.blank(width, style)
        if selection is not None:  # highlighted: drawn afresh, not kept
            return selected_line(self._text_lines[index], index, scroll_x, width, style, selection,
                                 self.screen.get_component_rich_style("screen--selection"), self.app.console)
        return self._strip(index, (scroll_x, width, style))

    def _strip(self, index: int, view: _View) -> Strip:
        """Line `index` cut to `view`, kept with its text and view: a line that only moved up the pane (the
        view followed a new chunk) is not drawn again, and is the same strip object (see the docstring)."""
        text = self._text_lines[index]
        drawn = self._drawn.get(index)
        if drawn is not None and drawn[0] == text and drawn[1] == view:
            return drawn[2]
        strip = line_strip(text, index, view[0], view[1], view[2])
        self._drawn[index] = (text, view, strip)
        if len(self._drawn) > SHOWN_LINES:
            del self._drawn[next(iter(self._drawn))]  # the line drawn longest ago
        return strip

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The text under the lead's mouse selection (to copy), as `Log` gives it."""
        return selection.extract("\n".join(self._text_lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        """The selection moved: draw every row again (highlighted rows are never kept)."""
        self._drawn.clear()
        self.refresh()

    # --- the title and the breaking of long lines -----------------------------------------------------
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
