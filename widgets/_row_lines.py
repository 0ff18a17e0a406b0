"""The segments of one list-pane cell, built directly for plain text and through Rich for the rest.

A list pane's cells are nearly all short text of one-cell characters in one style, left or right
justified, and they always fit their column (columns only grow, see `_keyed_table`). Rendering each
through Rich (`Padding(Text)` in `Styled`, five renderables) cost ~0.3 ms a cell (docs/benchmarks.md,
B1); for these the result is known: the padding, the text, the justifying spaces, each in the style
Rich would give it. Anything else (wide, zero-width or control characters, text wider than its
column) goes through Rich, the way Textual's DataTable renders a cell, so both draw the same line.
Only public Rich and Textual API here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from rich.cells import cell_len, get_character_cell_size
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.renderables.styled import Styled
from textual.strip import Strip

__all__ = ["PADDING", "Cell", "Frame", "cell_segments", "row_line", "text_width"]

#: Spaces each side of a cell, as DataTable's default `cell_padding`.
PADDING = 1


class Cell(NamedTuple):
    """What a cell shows. `tone` is a theme variable name ("warning", "error", "success"), "dim" or ""."""

    text: str
    tone: str = ""
    right: bool = False
    bold: bool = False


class Frame(NamedTuple):
    """What every line of a frame is drawn with; when any of it changes, every kept line goes."""

    width: int
    scroll_x: int
    base: Style
    header: Style
    cursor: Style
    hover: Style
    layout: int
    tones: int

#: Outside printable ASCII (space to tilde): characters whose width Rich must give.
_NOT_PRINTABLE = re.compile(r"[^\x20-\x7e]")


def one_cell_each(text: str) -> bool:
    """Every character takes one cell (so cutting by characters cuts by cells): ASCII in C speed,
    other text ("·", "—", "✗") by Rich's own table, as Rich would measure it."""
    if not _NOT_PRINTABLE.search(text):
        return True
    return all(get_character_cell_size(char) == 1 for char in text)


def text_width(text: str, console: Console) -> int:
    """The cells `text` takes in a cell, as Rich measures it (a column is as wide as its widest)."""
    if one_cell_each(text):
        return len(text)
    return Measurement.get(console, console.options, Text(text, end="")).maximum


def cell_segments(text: str, width: int, padding: int, pre: Style, post: Style, tone: Style | None,
                  right: bool, console: Console, options: ConsoleOptions) -> list[Segment]:
    """The cell's one line at `width` cells (padding included), as DataTable draws a Rich `Text` cell.

    `pre` is the row's style with the cell's meta and the cursor's component style (under the text's
    own tone), `post` the cursor's foreground (over it), layered as DataTable layers them.
    """
    inner = width - 2 * padding
    if inner >= 1 and one_cell_each(text) and len(text) <= inner:
        plain = text.rstrip() if right else text  # Rich strips a right-justified line before padding it
        fill = " " * (inner - len(plain))
        bare = pre + post
        edge = [Segment(" " * padding, bare)] if padding else []
        if tone is None:
            body = [Segment(fill + plain if right else plain + fill, bare)]
        else:
            toned = pre + tone + post
            parts = [Segment(fill, bare), Segment(plain, toned)] if right else \
                [Segment(plain, toned), Segment(fill, bare)]
            body = [part for part in parts if part.text]
        return [*edge, *body, *edge]
    rich_text = Text(text, justify="right" if right else "left", end="")
    if tone is not None:
        rich_text.stylize(tone)
    lines = console.render_lines(Styled(Padding(rich_text, (0, padding)), pre_style=pre, post_style=post),
                                 options.update_dimensions(width, 1).update(no_wrap=True))
    line = lines[0] if lines else []
    return line if cell_len("".join(s.text for s in line)) == width else \
        list(Segment.adjust_line_length(line, width, pre + post))


def row_line(index: int, cells: Sequence[tuple[Cell, Style | None]], widths: Sequence[int], cursor: bool,
             hover: bool, frame: Frame, console: Console, options: ConsoleOptions) -> Strip:
    """Line of row `index` (-1: the header) as DataTable draws it with a row cursor: each cell (with its
    tone's style) at its column's width, then the row's style to the edge, cut to the view."""
    row_style = frame.header if index < 0 else frame.base
    component = Style()
    if hover:
        component += frame.hover
    if cursor:
        component += frame.cursor
    post = Style.from_color(color=component.color)
    segments: list[Segment] = []
    for column, ((cell, tone), width) in enumerate(zip(cells, widths, strict=True)):
        pre = row_style + Style.from_meta({"row": index, "column": column}) + component
        segments += cell_segments(cell.text, width + 2 * PADDING, PADDING, pre, post, tone, cell.right, console,
                                  options)
    used = sum(width + 2 * PADDING for width in widths)
    if frame.width > used:
        extend = row_style + component + Style.from_meta({"row": index, "column": 0, "out_of_bounds": True})
        segments.append(Segment(" " * (frame.width - used), extend))
    strip = Strip(segments, max(used, frame.width))
    if frame.scroll_x or used > frame.width:
        strip = strip.crop(frame.scroll_x, frame.scroll_x + frame.width)
    return strip.adjust_cell_length(frame.width, frame.base).simplify()
