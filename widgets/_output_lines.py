"""The Output pane's lines as strips, built from Rich segments directly (public Textual and Rich API only).

The pane's lines are plain text: `clean_text` has already removed ANSI escapes and control characters
and turned tabs into spaces, so a line is one run of text in the pane's style. Textual's `Log` made a
Rich `Text` for each line, rendered it through the console and cut it to the view in three steps
(three strips, each some 15 objects for the garbage collector); a line here is one `Segment` for the
text and one for the spaces that fill the width, with the `offset` meta Textual's text selection reads,
exactly as `Log` draws it (`tests/test_widgets_output.py` compares both, segment for segment).
"""

from __future__ import annotations

import re

from rich.cells import cell_len, get_character_cell_size
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.selection import Selection
from textual.strip import Strip

__all__ = ["fitted_line", "line_strip", "selected_line", "widest"]

#: Outside printable ASCII (space to tilde): characters whose width Rich must give.
_NOT_PRINTABLE = re.compile(r"[^\x20-\x7e]")


def one_cell_each(text: str) -> bool:
    """Every character takes one cell, so characters count cells: ASCII in C speed, other text ("·",
    "—", "✗") by Rich's own table, as Rich would measure it."""
    if not _NOT_PRINTABLE.search(text):
        return True
    return all(get_character_cell_size(char) == 1 for char in text)


def line_strip(text: str, y: int, scroll_x: int, width: int, style: Style) -> Strip:
    """Line `y` (`text`) as the view shows it: cut to `width` cells from `scroll_x`, filled with spaces.

    A line of one-cell characters that fits and is not scrolled sideways (nearly every line an agent
    prints) is built in one step (`fitted_line`); any other line through Textual's public strip cuts.
    """
    if scroll_x == 0 and len(text) <= width and one_cell_each(text):
        return fitted_line(text, y, width, style)
    whole = Strip([Segment(text, style)] if text else [Segment("")], cell_len(text))
    return whole.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, y)


def fitted_line(text: str, y: int, width: int, style: Style) -> Strip:
    """Line `y` of one-cell characters, no wider than `width` and not scrolled sideways.

    The same segments as `Strip([Segment(text, style)]).crop_extend(0, width, style).apply_offsets(0, y)`:
    the text, the spaces that fill the width, each with the offset Textual's text selection reads.
    """
    def at(x: int) -> Style:
        offset = Style.from_meta({"offset": (x, y)})
        return style + offset if style else offset

    # An empty line is one empty segment with no style of its own: only the offset (as Log draws it).
    segments = [Segment(text, at(0)) if text else Segment("", Style.from_meta({"offset": (0, y)}))]
    if len(text) < width:
        segments.append(Segment(" " * (width - len(text)), at(len(text))))
    return Strip(segments, width)


def selected_line(text: str, y: int, scroll_x: int, width: int, style: Style, selection: Selection,
                  selection_style: Style, console: Console) -> Strip:
    """Line `y` with the part of it under the text selection in `selection_style` (as Log highlights it)."""
    line = Text(text, no_wrap=True)
    line.stylize(style)
    span = selection.get_span(y)
    if span is not None:
        start, end = span
        line.stylize(selection_style, start, len(line) if end == -1 else end)
    whole = Strip(line.render(console), cell_len(text))
    return whole.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, y)


def widest(lines: list[str], text: str) -> int:
    """The widest of `lines` in cells. `text` is what was just added to them: when it and the first line
    (which may have begun before) are ASCII, every line's width is its length, measured in C (a 2,000-line
    tail measured line by line in Python cost ~20 ms, on the key-press path)."""
    if not lines:
        return 0
    if text.isascii() and lines[0].isascii():
        return max(map(len, lines))
    return max(map(cell_len, lines))
