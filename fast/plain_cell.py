"""A one-line table cell of plain text, built as segments directly rather than through Rich.

DataTable renders every cell with `console.render_lines(Styled(Padding(text, (0, pad)), pre, post))`:
measuring, wrapping, justifying and padding a Rich `Text` through five renderables, ~0.3 ms a cell.
A cursor move renders the cells of the row it lands on (B1: ~30 cells, most of a 20 ms frame at 100
lanes) and every meter sample re-renders the cells it changed. The list panes' cells are nearly all
short text of one-cell characters in one style, left or right justified; for those the result is
known without Rich: padding, the text cut to the width, the justifying spaces, each in the style
Rich would give it. Anything else (wide, zero-width or control characters, several styles, wrapping,
centring) returns None and DataTable's own path renders it. `tests/test_plain_cell.py` holds the two paths equal.
"""

from __future__ import annotations

import re

from rich.cells import get_character_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

__all__ = ["one_cell_each", "plain_cell_line"]

#: Outside printable ASCII (space to tilde): characters whose width Rich's tables must give.
_NOT_PRINTABLE = re.compile(r"[^\x20-\x7e]")
#: Justifications drawn here; None and "default" pad on the right like "left" does.
_LEFT = (None, "default", "left")


def plain_cell_line(text: Text, width: int, padding: int, pre: Style, post: Style) -> list[Segment] | None:
    """The cell's one line as DataTable draws it at `width` cells, or None if Rich must render it.

    `pre` is the row's base style with the cell's meta and component style (under the text's own),
    `post` the cursor's or hover's style (over it), as DataTable's `_render_cell` layers them.
    """
    inner = width - 2 * padding
    plain = text.plain
    if (inner < 1 or padding < 0 or (text.justify not in _LEFT and text.justify != "right")
            or text.no_wrap is False or text.overflow not in (None, "fold", "crop") or text.end or text.style
            or len(text.spans) > 1 or not one_cell_each(plain)):
        return None
    tone: Style | None = None
    if text.spans:
        span = text.spans[0]
        if not isinstance(span.style, Style) or span.start > 0 or span.end < len(plain):
            return None
        tone = span.style
    if text.justify == "right":
        plain = plain.rstrip()  # Rich strips a right-justified line before padding it on the left
    shown = plain[:inner]
    fill = " " * (inner - len(shown))
    bare = pre + post
    edge = Segment(" " * padding, bare) if padding else None
    if tone is None:
        body = [Segment(fill + shown if text.justify == "right" else shown + fill, bare)]
    else:
        toned = pre + tone + post
        parts = [Segment(fill, bare), Segment(shown, toned)] if text.justify == "right" else \
            [Segment(shown, toned), Segment(fill, bare)]
        body = [part for part in parts if part.text]
    return [edge, *body, edge] if edge else body


def one_cell_each(plain: str) -> bool:
    """Every character takes one cell (so cutting by characters cuts by cells): ASCII in C speed, other
    text ("·", "—", "✗") by Rich's own table, as Rich would measure it."""
    if not _NOT_PRINTABLE.search(plain):
        return True
    return all(get_character_cell_size(char) == 1 for char in plain)
