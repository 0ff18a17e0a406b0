"""The Output pane's and the list panes' own row path draws exactly what Textual's draws, and frames a
row once (issue 15, B1 and B2).

`fast.framed_rows.FramedRowsCache` frames a content row by joining the border and padding pieces
round it; the Output pane hands it the same strip for a line while the line stays (`OutputPane._strip`).
Each test renders the pane both ways, on the same pane in the same state: ours, then with Textual's own
`StylesCache` (and the pane's kept lines forgotten), and compares every segment of every row. That the
pane's content lines are `Log`'s is `tests/test_widgets_output.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from rich.segment import Segment
from rich.style import Style
from textual._styles_cache import StylesCache
from textual.geometry import Offset, Region
from textual.pilot import Pilot
from textual.selection import Selection
from textual.strip import Strip

from lanes_tui.engine.state.samples import parse_sample
from lanes_tui.fast.framed_rows import FramedRowsCache
from lanes_tui.widgets import LanesTable, OutputPane
from lanes_tui.widgets._output_lines import fitted_line
from tests.snapshot_apps.widget_apps import WidgetHost, lane, showing_lanes

#: What agents print, and what must leave the fast path: wide and zero-width characters, a tab,
#: an empty line, a line as wide as the pane, one wider (broken by nothing: it is cut by the view).
LINES = ["plain ascii, as most agent output is", "", "x" * 36, "y" * 37, "wide 漢字 here", "tab\there",
         "accent e\u0301", "the last line, unterminated"]


def _rows(widget: OutputPane | LanesTable) -> list[list[Segment]]:
    return [list(strip) for strip in widget.render_lines(Region(0, 0, *widget.outer_size))]


@contextmanager
def _textual_way(pane: OutputPane) -> Iterator[None]:
    """Render the pane with Textual's own StylesCache, every line drawn afresh, then put ours back."""
    ours = pane._styles_cache
    pane._styles_cache = StylesCache()
    pane._drawn.clear()
    try:
        yield
    finally:
        pane._styles_cache = ours
        pane._drawn.clear()


def _both_ways(pane: OutputPane) -> tuple[list[list[Segment]], list[list[Segment]]]:
    ours = _rows(pane)
    cache = pane._styles_cache
    assert isinstance(cache, FramedRowsCache) and cache._pieces is not None  # ours did frame the rows
    with _textual_way(pane):
        theirs = _rows(pane)
    _rows(pane)  # ours again, from cold caches: the next frame starts from them
    return ours, theirs


@asynccontextmanager
async def _showing_lines() -> AsyncIterator[tuple[OutputPane, WidgetHost, Pilot[None]]]:
    """A 40 x 12 Output pane showing LINES, settled."""
    pane = OutputPane(max_lines=100)
    app = WidgetHost(pane)
    app.CSS = "OutputPane { width: 40; height: 12; }"
    async with app.run_test(size=(60, 20)) as pilot:
        pane.show("lane-a1", "\n".join(LINES))
        await pilot.pause()
        yield pane, app, pilot


async def test_the_pane_draws_every_row_as_textual_does_following_focused_and_in_another_theme() -> None:
    async with _showing_lines() as (pane, app, pilot):
        assert isinstance(pane._styles_cache, FramedRowsCache)
        ours = _drawn_as_textual_draws(pane)
        assert any(row[1:] and row[2].text == "plain ascii, as most agent output is" for row in ours)  # not blank
        for batch in range(3):  # the view follows: every row moves up
            pane.append("lane-a1", "".join(f"\nbatch {batch} line {i}" for i in range(4)) + "\n" + "\n".join(LINES))
            await pilot.pause()
            _drawn_as_textual_draws(pane)
        pane.focus()  # the border changes colour: the pieces are taken again
        await pilot.pause()
        _drawn_as_textual_draws(pane)
        app.theme = "textual-light"
        await pilot.pause()
        _drawn_as_textual_draws(pane)
        pane.scroll_to(x=3, y=2, animate=False, immediate=True)  # sideways: Textual's strip cuts for every line
        await pilot.pause()
        assert pane.scroll_offset == Offset(3, 2)
        _drawn_as_textual_draws(pane)


async def test_a_row_that_only_moved_up_is_not_framed_again() -> None:
    pane = OutputPane(max_lines=1000)
    app = WidgetHost(pane)
    app.CSS = "OutputPane { width: 60; height: 20; }"
    async with app.run_test(size=(80, 24)) as pilot:
        pane.show("lane-a1", "".join(f"line {i}\n" for i in range(50)))
        await pilot.pause()
        cache = pane._styles_cache
        assert isinstance(cache, FramedRowsCache)
        for batch in range(5):
            before = cache.framed_by_join
            pane.append("lane-a1", "".join(f"batch {batch} line {i}\n" for i in range(3)))
            await pilot.pause()
            # Three new lines and the open last line changed: those are framed, the 14 that moved up are not.
            assert cache.framed_by_join - before == 4
        rows = [Strip(row).text for row in _rows(pane)]
        assert rows[-3].startswith("│ batch 4 line 2")  # then the open (empty) last line, then the border


async def test_selected_text_is_highlighted_the_textual_way_and_not_kept() -> None:
    async with _showing_lines() as (pane, app, pilot):
        plain = _rows(pane)
        app.screen.selections = {pane: Selection(Offset(0, 0), Offset(5, 2))}
        await pilot.pause()
        ours = _drawn_as_textual_draws(pane)
        assert ours != plain  # the selection shows
        app.screen.selections = {}
        await pilot.pause()
        assert _rows(pane) == plain  # and goes: nothing made while it showed is shown after it


def test_a_fitted_line_is_the_line_log_makes() -> None:
    for style in (Style(color="#e0e0e0", bgcolor="#101010"), Style()):
        for text, width in (("hello", 12), ("", 8), ("exactly", 7)):
            for y in (0, 41):
                log_way = Strip([Segment(text, style)] if text else [Segment("")], len(text))
                expected = log_way.crop_extend(0, width, style).apply_offsets(0, y)
                fitted = fitted_line(text, y, width, style)
                assert list(fitted) == list(expected)
                assert fitted.cell_length == expected.cell_length == width


def _table_both_ways(table: LanesTable) -> tuple[list[list[Segment]], list[list[Segment]]]:
    ours = _rows(table)
    cache = table._styles_cache
    assert isinstance(cache, FramedRowsCache) and cache._pieces is not None
    table._styles_cache = StylesCache()
    try:
        theirs = _rows(table)
    finally:
        table._styles_cache = cache
    return ours, theirs


def _drawn_as_textual_draws(widget: OutputPane | LanesTable) -> list[list[Segment]]:
    """Assert the widget's rows are Textual's, segment for segment; return them."""
    ours, theirs = _both_ways(widget) if isinstance(widget, OutputPane) else _table_both_ways(widget)
    assert ours == theirs
    return ours


async def test_the_lanes_table_draws_every_row_as_textual_does_and_frames_a_row_once() -> None:
    many = [lane(f"lane-{i:02d}-a1", "running" if i % 3 else "waiting", task=f"task {i}") for i in range(30)]
    async with showing_lanes(many, height=12, size=(120, 20)) as (table, app, pilot):
        _drawn_as_textual_draws(table)
        table.update_meters("lane-01-a1", parse_sample({"idle_s": 5, "cpu_percent": 12.5, "rss_bytes": 2 * 1024**2}))
        await pilot.pause()
        _drawn_as_textual_draws(table)
        table.focus()
        for _ in range(12):  # down past the bottom: the rows scroll up under the cursor
            await pilot.press("down")
        cache = table._styles_cache
        assert isinstance(cache, FramedRowsCache)
        before = cache.framed_by_join
        await pilot.press("down")  # one more row scrolls in: it and the two the cursor moved between
        assert table.scroll_offset.y > 0
        assert 1 <= cache.framed_by_join - before <= 3
        _drawn_as_textual_draws(table)
        app.theme = "textual-light"
        await pilot.pause()
        _drawn_as_textual_draws(table)
