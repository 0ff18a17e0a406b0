"""The Output pane on Textual's public Line API (issue 31): it draws what Textual's `Log` draws for the same
lines, and a new chunk draws only its new lines.

The pane is a `ScrollView` with its own `render_line` (no `Log` surgery). Each comparison mounts a stock
`Log` beside it, given the same cleaned text, the same size, scroll offset, theme, focus and selection,
and compares `render_line` of every row, segment for segment (both are public Line API methods).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from rich.segment import Segment
from textual.containers import Horizontal
from textual.geometry import Offset
from textual.pilot import Pilot
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.widgets import Log

from lanes_tui.widgets import OutputPane, output_pane
from lanes_tui.widgets import _output_lines as output_lines
from lanes_tui.widgets._format import clean_text
from tests.snapshot_apps.widget_apps import WidgetHost

#: What agents print, and what must leave the one-step path: wide and zero-width characters, a tab
#: (four spaces once cleaned), an empty line, lines as wide as the view and wider, escapes and bells.
LINES = ["plain ascii, as most agent output is", "", "x" * 36, "y" * 37, "wide 漢字 here", "tab\there",
         "accent e\u0301", "\x1b[31mred\x1b[0m and a \x07bell", "· ✗ — ok", "the last line, unterminated"]
CSS = "OutputPane, Log { width: 40; height: 14; border: round $panel; padding: 0 1; scrollbar-gutter: stable; }"


def _random_lines(count: int) -> list[str]:
    rng = random.Random(7)
    alphabet = [*"line 7: simulated output ", "·", "✗", "é", "\t", "漢", "\u0301", "\x7f", "€"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 50))) for _ in range(count)]


@asynccontextmanager
async def _pane_and_log(text: str) -> AsyncIterator[tuple[OutputPane, Log, WidgetHost, Pilot[None]]]:
    """The pane showing `text` beside a stock `Log` given the same text as the pane keeps it (cleaned)."""
    pane, log = OutputPane(max_lines=1000), Log(max_lines=1000)
    app = WidgetHost(Horizontal(pane, log))
    app.CSS = CSS
    async with app.run_test(size=(100, 20)) as pilot:
        pane.show("lane-a1", text)
        log.write(clean_text(text))
        app.set_focus(None)  # (the pane, first, would have it: focus tints; that is compared on its own)
        await pilot.pause()
        yield pane, log, app, pilot


async def _same_rows(pilot: Pilot[None], pane: OutputPane, log: Log, *, focused: bool = True) -> list[list[Segment]]:
    """Put the log where the pane is scrolled to, then assert every row of the view is drawn alike (with
    `focused` False, return the log's rows: the pane was drawn while it had the focus)."""
    log.scroll_to(*pane.scroll_offset, animate=False, immediate=True)
    await pilot.pause()
    assert log.scroll_offset == pane.scroll_offset and log.size.width == pane.size.width
    theirs = [list(log.render_line(y)) for y in range(pane.size.height)]
    if not focused:
        return theirs
    ours = [list(pane.render_line(y)) for y in range(pane.size.height)]
    assert ours == theirs
    return ours


async def test_every_line_is_drawn_as_log_draws_it_scrolled_focused_and_in_another_theme() -> None:
    async with _pane_and_log("\n".join([*LINES, *_random_lines(300), *LINES])) as (pane, log, app, pilot):
        assert isinstance(pane, ScrollView) and not isinstance(pane, Log)
        assert list(pane.lines) == list(log.lines) and pane.virtual_size == log.virtual_size
        rows = await _same_rows(pilot, pane, log)
        assert any(segment.text == "the last line, unterminated" for row in rows for segment in row)
        for y in (0, 5, 137):
            pane.scroll_to(y=y, animate=False, immediate=True)
            await _same_rows(pilot, pane, log)
        pane.scroll_to(x=3, y=2, animate=False, immediate=True)  # sideways: every line cut from the left
        await _same_rows(pilot, pane, log)
        app.theme = "textual-light"
        await pilot.pause()
        unfocused = await _same_rows(pilot, pane, log)
        pane.focus()  # tinted, as Log's focus tints it: the pane focused, then the log, alike
        await pilot.pause()
        focused = [list(pane.render_line(y)) for y in range(pane.size.height)]
        log.focus()
        await pilot.pause()
        assert focused != unfocused and focused == await _same_rows(pilot, pane, log, focused=False)


async def test_a_growing_pane_draws_as_log_after_every_chunk() -> None:
    """Chunks cut every 97 characters (mid-line), followed at the tail, as the engine's events come."""
    text = "\n".join([*LINES, *_random_lines(120)]) + "\n"
    async with _pane_and_log("") as (pane, log, _app, pilot):
        for start in range(0, len(text), 97):
            chunk = text[start:start + 97]
            assert pane.append("lane-a1", chunk)
            log.write(clean_text(chunk))
            await pilot.pause()
            assert list(pane.lines) == list(log.lines) and pane.is_vertical_scroll_end
            await _same_rows(pilot, pane, log)
        assert pane.virtual_size == log.virtual_size


async def test_selected_text_is_highlighted_and_copied_as_log_does() -> None:
    async with _pane_and_log("\n".join(LINES)) as (pane, log, app, pilot):
        plain = await _same_rows(pilot, pane, log)
        selection = Selection(Offset(2, 0), Offset(5, 4))
        app.screen.selections = {pane: selection, log: selection}
        await pilot.pause()
        highlighted = await _same_rows(pilot, pane, log)
        assert highlighted != plain  # the selection shows
        assert pane.get_selection(selection) == log.get_selection(selection)
        app.screen.selections = {}
        await pilot.pause()
        assert await _same_rows(pilot, pane, log) == plain  # and goes: nothing drawn while it showed is kept


async def test_a_chunk_draws_only_its_new_lines_and_a_tail_only_the_rows_in_view(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The acceptance of the Line API pane: Log drew every row in view at every frame (its line cache is
    filled only while text is selected); the pane draws a line once and keeps it while it only moves up."""
    drawn: list[str] = []
    real = output_lines.line_strip

    def counting(text: str, *args: object) -> object:
        drawn.append(text)
        return real(text, *args)  # type: ignore[arg-type]

    pane = OutputPane()
    app = WidgetHost(pane)
    app.CSS = "OutputPane { width: 60; height: 20; }"
    monkeypatch.setattr(output_pane, "line_strip", counting)
    async with app.run_test(size=(80, 24)) as pilot:
        pane.show("lane-a1", "".join(f"line {i}\n" for i in range(2000)))
        await pilot.pause()
        view = pane.size.height
        assert pane.line_count == 2000 and pane.is_vertical_scroll_end
        assert 0 < len(drawn) <= view  # a 2,000-line tail: the rows in view, not the tail
        for batch in range(5):
            drawn.clear()
            pane.append("lane-a1", "".join(f"batch {batch} line {i}\n" for i in range(3)))
            await pilot.pause()
            # The three new lines and the open (empty) last one under them; every row that only moved up
            # is kept, not drawn again.
            assert sorted(drawn) == ["", *(f"batch {batch} line {i}" for i in range(3))], drawn
