"""Rows of the Output pane and the list panes, each framed once: border and padding put round a
content line by hand.

Textual's `StylesCache` keeps a widget's rendered rows by their place on the screen, so when a pane
scrolls every row is dirty and goes through `StylesCache.render_line` again: the border, the
padding and the row's strip worked out afresh, ~0.2 ms a row. A following Output pane scrolls at
every batch, so its 18 rows cost 4 ms of each of its two frames a second (docs/benchmarks.md, B2);
a cursor move that scrolls the Lanes table re-framed every visible row (B1).

A row between the borders is always the same pieces: the left border and padding, the content line
cut to the content width, the right padding and border. `FramedRowsCache` takes those pieces from
one row Textual frames itself (whenever what frames a row changes: size, colours, borders, padding),
then frames each content line by joining, and keeps the framed row under the content line's strip
(the Output pane and the list panes' `KeyedTable` hand out the same strip object for a line until that line changes).
A row that only moved up is found again; a new one costs a join. Rows that are not plain content
(borders, padding rows) and panes with effects on their rows (tint, opacity, text opacity, hatch,
outline) go through Textual's own `render_line`; `tests/test_framed_rows.py` holds both ways equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.terminal_theme import DEFAULT_TERMINAL_THEME, TerminalTheme
from textual._styles_cache import StylesCache
from textual.color import Color
from textual.css.styles import StylesBase
from textual.filter import LineFilter
from textual.geometry import Region, Size, Spacing
from textual.strip import Strip
from textual.widget import Widget

__all__ = ["FramedRowsCache", "use_framed_rows"]


def use_framed_rows(widget: Widget) -> bool:
    """Give `widget` a `FramedRowsCache` if the `framed_rows` path is on; whether it did.

    For a Line API widget that hands out the same strip object for a line until the line changes (the
    list panes' `KeyedTable`): the widget stays on public API, the private attribute is set here.
    """
    from lanes_tui.fast.checks import enabled

    if not enabled("framed_rows"):
        return False
    widget._styles_cache = FramedRowsCache()
    return True


class FramedRowsCache(StylesCache):
    """A `StylesCache` that frames plain content rows by joining pieces, and remembers each framed row."""

    #: Framed rows kept beyond those on screen: rows leave the view in the order they came in.
    SPARE_ROWS = 64

    def __init__(self) -> None:
        super().__init__()
        self._frame_key: tuple[Any, ...] | None = None
        self._pieces: tuple[list[Segment], list[Segment], Style] | None = None
        self._rows: tuple[int, int, Size] = (0, 0, Size(0, 0))
        """The frame's first content row, the row after its last, and its content size (see `render`)."""
        self._framed: dict[int, tuple[Strip, Strip]] = {}
        """id(content strip) -> (that strip, its framed row); the strip is held, so its id stays its own."""
        self.framed_by_join = 0
        """Rows framed here rather than by Textual (the tests read it)."""

    def clear(self) -> None:
        super().clear()
        self._frame_key = None
        self._pieces = None
        self._framed.clear()

    def render(self, styles: StylesBase, size: Size, base_background: Color, background: Color,
               render_content_line: Callable[[int], Strip], filters: Sequence[LineFilter],
               border_title: Any, border_subtitle: Any, content_size: Size | None = None,
               padding: Spacing | None = None, crop: Region | None = None, opacity: float = 1.0,
               ansi_theme: TerminalTheme = DEFAULT_TERMINAL_THEME, native_ansi: bool = False) -> list[Strip]:
        """Textual's `render`, with what frames a row looked up once for the frame (not once a row)."""
        content_size = size if content_size is None else content_size
        padding = styles.padding if padding is None else padding
        plain = opacity == 1.0 and not _has_effects(styles)
        key = (size, content_size, padding, base_background, background, styles.border, ansi_theme, native_ansi)
        if not plain:
            self._pieces = None
            self._frame_key = None
        elif key != self._frame_key:
            self._framed.clear()
            self._frame_key = key
            self._pieces = self._frame_pieces(styles, size, content_size, padding, base_background, background,
                                              opacity, ansi_theme, native_ansi)
        self._rows = (styles.gutter.top, size.height - styles.gutter.bottom, content_size)
        return super().render(styles, size, base_background, background, render_content_line, filters,
                              border_title, border_subtitle, content_size, padding, crop, opacity, ansi_theme,
                              native_ansi)

    def render_line(self, styles: StylesBase, y: int, size: Size, content_size: Size, padding: Spacing,
                    base_background: Color, background: Color, render_content_line: Callable[[int], Strip],
                    *args: Any) -> Strip:
        """Textual's row, or for a plain content row the same row joined from the frame's pieces."""
        first, end, framed_size = self._rows
        content_y = y - first
        if (self._pieces is None or framed_size != content_size or not (0 <= content_y < content_size.height)
                or y >= end):
            return super().render_line(styles, y, size, content_size, padding, base_background, background,
                                       render_content_line, *args)
        content = render_content_line(content_y)
        found = self._framed.get(id(content))
        if found is not None and found[0] is content:
            return found[1]
        left, right, inner = self._pieces
        line = content.adjust_cell_length(content_size.width, inner)
        framed = Strip([*left, *line, *right], size.width)
        self.framed_by_join += 1
        self._framed[id(content)] = (content, framed)
        if len(self._framed) > content_size.height + self.SPARE_ROWS:
            del self._framed[next(iter(self._framed))]  # the oldest: it scrolled out of view long ago
        return framed

    def _frame_pieces(self, styles: StylesBase, size: Size, content_size: Size, padding: Spacing,
                      base_background: Color, background: Color, opacity: float, ansi_theme: TerminalTheme,
                      native_ansi: bool) -> tuple[list[Segment], list[Segment], Style] | None:
        """The segments left and right of the content in a row Textual frames itself, with the content
        left empty; None if that row does not split into them as expected."""
        if content_size.height < 1:
            return None
        inner = self.get_inner_outer(base_background, background)[0].rich_style
        probe = super().render_line(styles, styles.gutter.top, size, content_size, padding, base_background,
                                    background, lambda _y: Strip([], 0), None, None, opacity, ansi_theme,
                                    native_ansi)
        left_count = bool(styles.border_left[0]) + (padding.left > 0)
        right_count = bool(styles.border_right[0]) + (padding.right > 0)
        segments = list(probe)
        if len(segments) != left_count + 1 + right_count:
            return None
        left, middle, right = segments[:left_count], segments[left_count], segments[left_count + 1:]
        if middle.text != " " * content_size.width or middle.style != inner or probe.cell_length != size.width:
            return None
        return left, right, inner


def _has_effects(styles: StylesBase) -> bool:
    """Whether Textual's row would be more than border + padding + content (then it frames the row)."""
    if styles.tint.a or styles.text_opacity != 1.0:
        return True
    if styles.has_rule("hatch") and styles.hatch != "none":
        return True
    return any(edge for edge, _ in styles.outline)

