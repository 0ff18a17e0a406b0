"""The dashboard repaints what changed and no more: a Lanes row only when one of its shown values
changes (and then only that row), the Output pane once per batch of text rather than once per line.

Correctness is checked against a table or pane built directly from the final data: the screen
after the incremental updates must be the same screen.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.widgets import Log

from lanes_tui.engine.state.samples import parse_sample
from lanes_tui.fast import enabled
from lanes_tui.widgets import LanesTable, OutputPane
from tests.snapshot_apps.widget_apps import LANES, NOW, WidgetHost


def fast_only(path: str) -> pytest.MarkDecorator:
    """These tests count what a fast path saves (repaints, layouts, renders): with it off (`LANES_TUI_STOCK=1`,
    or a Textual its start-up check refuses) there is nothing to count; the snapshots hold both modes equal."""
    return pytest.mark.skipif(not enabled(path), reason=f"counts the {path} fast path's savings; it is off")

SAMPLE = parse_sample({"idle_s": 75, "cpu_percent": 99.4, "rss_bytes": 2 * 1024**3})
NEXT = parse_sample({"idle_s": 74, "cpu_percent": 12.0, "rss_bytes": 1024**3})  # no wider than SAMPLE: no column grows


def _spy_refresh(widget: Any) -> list[tuple[Region, ...]]:
    calls: list[tuple[Region, ...]] = []
    real = widget.refresh

    def spy(*regions: Region, **kwargs: Any) -> Any:
        calls.append(regions)
        return real(*regions, **kwargs)

    widget.refresh = spy
    return calls


async def _built_at_once_with_samples() -> str:
    """The screen of a table given LANES and both samples before its first frame."""
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 36)) as pilot:
        table.sync(LANES, NOW)
        table.update_meters("fix-login-a1", SAMPLE)
        table.update_meters("fix-login-a1", NEXT)
        await pilot.pause()
        return app.export_screenshot()


def _spy_layouts(pane: OutputPane) -> list[int]:
    """The pane's line count at each refresh that asks for a layout of the screen."""
    layouts: list[int] = []
    real = pane.refresh

    def spy(*regions: Region, layout: bool = False, **kwargs: Any) -> Any:
        if layout:
            layouts.append(pane.line_count)
        return real(*regions, layout=layout, **kwargs)

    pane.refresh = spy  # type: ignore[method-assign]
    return layouts


async def test_an_unchanged_sync_repaints_nothing_and_a_meter_repaints_its_row_only() -> None:
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 36)) as pilot:
        table.sync(LANES, NOW)
        await pilot.pause()
        refreshes = _spy_refresh(table)
        table.sync(LANES, NOW)  # the same data again: no cell, no refresh (not even of the border title)
        await pilot.pause()
        assert refreshes == []
        table.update_meters("fix-login-a1", SAMPLE)  # wider values: their columns grow, the table repaints
        await pilot.pause()
        refreshes.clear()
        before = table.cell_updates
        table.update_meters("fix-login-a1", NEXT)
        await pilot.pause()
        assert table.cell_updates == before + 3
        assert refreshes and all(len(regions) == 1 and regions[0].height == 1 for regions in refreshes), \
            f"only the lane's row may be repainted, got {refreshes}"
        refreshes.clear()
        table.update_meters("fix-login-a1", NEXT)  # a sample that shows the same figures
        await pilot.pause()
        assert refreshes == [] and table.cell_updates == before + 3
        incremental = app.export_screenshot()

    # The same lanes shown in one go, the sample already in: the very same screen.
    assert await _built_at_once_with_samples() == incremental


async def test_the_output_pane_writes_a_batch_in_one_refresh_and_shows_the_same_lines() -> None:
    pane = OutputPane(max_lines=100)
    app = WidgetHost(pane)
    async with app.run_test(size=(100, 30)) as pilot:
        pane.show("a-a1", "first\nsecond, unfinished")
        await pilot.pause()
        lines_refreshed: list[tuple[int, int]] = []
        real = pane.refresh_lines

        def spy(y_start: int, line_count: int = 1) -> None:
            lines_refreshed.append((y_start, line_count))
            real(y_start, line_count)

        pane.refresh_lines = spy  # type: ignore[method-assign]
        batch = " line\n" + "".join(f"line {i}\n" for i in range(40)) + "partial"
        assert pane.append("a-a1", batch)
        assert lines_refreshed == [(1, 42)]  # one call: from the line that was open to the new open one
        await pilot.pause()
        screen = app.export_screenshot()
        more = "".join(f"more {i}\n" for i in range(200))
        assert pane.append("a-a1", more)  # past max_lines: pruned
        await pilot.pause()
        pruned = list(pane.lines)
        # Cut back to max_lines (the open empty last line counts), and the scroll range sized after the cut.
        assert pane.virtual_size.height == pane.line_count == 99
        assert pane.lines[0] == "more 101" and pane.lines[-2] == "more 199"

    # The same text shown in one go: the very same screen, and the same lines after the cut.
    fresh_pane = OutputPane(max_lines=100)
    fresh = WidgetHost(fresh_pane)
    async with fresh.run_test(size=(100, 30)) as pilot:
        fresh_pane.show("a-a1", "first\nsecond, unfinished" + batch)
        await pilot.pause()
        assert fresh.export_screenshot() == screen
        fresh_pane.show("a-a1", "first\nsecond, unfinished" + batch + more)
        await pilot.pause()
        assert list(fresh_pane.lines)[1:] == pruned  # (`show` keeps max_lines lines besides the open one)


async def test_printing_into_a_scrolled_pane_asks_for_no_layout_of_the_screen() -> None:
    """A layout pass re-arranges every widget and repaints the whole pane: not per batch of output."""
    pane = OutputPane(max_lines=500)
    app = WidgetHost(pane)
    async with app.run_test(size=(100, 30)) as pilot:
        pane.show("a-a1", "".join(f"line {i}\n" for i in range(100)))  # already taller than the view
        await pilot.pause()
        layouts = _spy_layouts(pane)
        for batch in range(5):
            if batch == 3:  # a line wider than the pane: the horizontal scrollbar appears (a layout)
                assert pane.append("a-a1", "wide " * 40 + "\n")
                await pilot.pause()
                layouts.clear()
            if batch == 4:  # a wider one still: the same scrollbar, a shorter thumb
                assert pane.append("a-a1", "wider " * 60 + "\n")
            assert pane.append("a-a1", "".join(f"batch {batch} line {i}\n" for i in range(10)))
            await pilot.pause()
        assert layouts == []
        assert pane.virtual_size.height == pane.line_count >= 151 and pane.show_horizontal_scrollbar
        assert pane.is_vertical_scroll_end and pane.lines[-2] == "batch 4 line 9"
        incremental = app.export_screenshot()

    fresh_pane = OutputPane(max_lines=500)
    fresh = WidgetHost(fresh_pane)
    async with fresh.run_test(size=(100, 30)) as pilot:
        batches = ["".join(f"batch {b} line {i}\n" for i in range(10)) for b in range(5)]
        batches.insert(4, "wider " * 60 + "\n")
        batches.insert(3, "wide " * 40 + "\n")
        fresh_pane.show("a-a1", "".join(f"line {i}\n" for i in range(100)) + "".join(batches))
        await pilot.pause()
        assert fresh.export_screenshot() == incremental  # the scrollbar and the lines as if shown at once


async def test_elapsed_ticks_by_the_minute_so_a_running_row_is_not_repainted_every_sync() -> None:
    table = LanesTable()
    app = WidgetHost(table)
    running = LANES[0]  # fix-login-a1, running, started ten minutes before NOW
    async with app.run_test(size=(120, 36)) as pilot:
        table.sync([running], NOW)
        await pilot.pause()
        assert plain_cell(table, running.id, "elapsed") == "10m"
        before = table.cell_updates
        for tick in range(1, 29):  # a sync every two seconds, within the same minute
            table.sync([running], NOW + 2 * tick)
        assert table.cell_updates == before
        table.sync([running], NOW + 60)
        assert table.cell_updates == before + 1 and plain_cell(table, running.id, "elapsed") == "11m"


def plain_cell(table: LanesTable, key: str, column: str) -> str:
    return str(table.get_cell(key, column).plain)


class _AlwaysThumb(OutputPane):
    """The pane with Textual's own scrollbar handling: the thumb is kept up to date at the tail too, and
    the scroll range is set through the layout reactive."""

    DEFAULT_CLASSES = ""  # its scrollbars always shown, as Textual shows them
    watch_scroll_y = ScrollView.watch_scroll_y

    def _set_scroll_range(self) -> None:
        self.virtual_size = Size(self._text_width, self.line_count)


async def test_the_thumb_left_alone_at_the_tail_is_right_when_the_lead_scrolls_up() -> None:
    screens = []
    for cls in (OutputPane, _AlwaysThumb):
        pane = cls(max_lines=500)
        app = WidgetHost(pane)
        async with app.run_test(size=(100, 30)) as pilot:
            pane.show("a-a1", "".join(f"line {i}\n" for i in range(60)))
            await pilot.pause()
            for batch in range(5):
                pane.append("a-a1", "".join(f"batch {batch} line {i}\n" for i in range(20)))
                await pilot.pause()
            pane.scroll_to(y=10, animate=False, immediate=True)
            await pilot.pause()
            assert pane.scroll_y == 10 and pane.vertical_scrollbar.position == 10
            screens.append(app.export_screenshot())
    assert screens[0] == screens[1]


def _spy_rows(table: LanesTable) -> list[str]:
    """The keys of the rows whose line the table builds (a line kept is not built again)."""
    built: list[str] = []
    real = table._build_row

    def spy(key: str, *args: Any) -> Any:
        built.append(key)
        return real(key, *args)

    table._build_row = spy  # type: ignore[method-assign]
    return built


async def test_a_meter_sample_re_renders_its_own_row_only_when_the_table_is_drawn_again() -> None:
    """Each row's line is kept until that row changes: a sample of one lane builds that lane's line and no
    other, even when the whole table is drawn again (as a scroll does; B1 at 100 lanes)."""
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 36)) as pilot:
        table.sync(LANES, NOW)
        table.update_meters("fix-login-a1", SAMPLE)  # columns grow here, once
        await pilot.pause()
        built = _spy_rows(table)
        table.refresh()  # nothing changed: the whole table drawn again from the kept lines
        await pilot.pause()
        assert built == []
        table.update_meters("fix-login-a1", NEXT)
        table.refresh()  # the whole table drawn again, as a scroll does
        await pilot.pause()
        assert built == ["fix-login-a1"], built
        incremental = app.export_screenshot()

    assert await _built_at_once_with_samples() == incremental  # what is drawn is the new sample


async def test_switching_lanes_in_the_output_pane_asks_for_no_layout_of_the_screen() -> None:
    """`Log.clear` sets `virtual_size`, a layout reactive: every lane switch laid out the whole screen
    (B1). The pane swaps its lines without one, and the scroll range is the new lane's, empty included."""
    pane = OutputPane(max_lines=500)
    app = WidgetHost(pane)
    async with app.run_test(size=(100, 30)) as pilot:
        pane.show("a-a1", "".join(f"a {i}\n" for i in range(100)))
        await pilot.pause()
        layouts = _spy_layouts(pane)
        pane.show("b-a1", "".join(f"b {i}\n" for i in range(50)))
        await pilot.pause()
        assert pane.lines[0] == "b 0" and pane.is_vertical_scroll_end
        pane.show("c-a1", "")  # a lane that printed nothing yet: nothing left to scroll to
        await pilot.pause()
        assert pane.line_count == 0 and pane.virtual_size.height == 0 and pane.scroll_y == 0
        pane.show("d-a1", "".join(f"d {i}\n" for i in range(100)))
        await pilot.pause()
        assert layouts == []
        assert pane.virtual_size.height == pane.line_count >= 100 and pane.is_vertical_scroll_end
        incremental = app.export_screenshot()

    fresh_pane = OutputPane(max_lines=500)
    fresh = WidgetHost(fresh_pane)
    async with fresh.run_test(size=(100, 30)) as pilot:
        fresh_pane.show("d-a1", "".join(f"d {i}\n" for i in range(100)))
        await pilot.pause()
        assert fresh.export_screenshot() == incremental


async def test_a_cursor_move_that_scrolls_renders_only_the_two_rows_it_changes() -> None:
    """A row's line is kept with and without the cursor on it: a move that scrolls the table builds at most
    two lines, not every visible row (B1: DataTable keyed its lines by the cursor's place and drew them
    all again)."""
    from tests.snapshot_apps.widget_apps import lane

    many = [lane(f"lane-{i:03d}-a1", "running", idle_s=3.0) for i in range(60)]
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 20)) as pilot:
        table.sync(many, NOW)
        await pilot.pause()
        table.focus()
        for _ in range(25):  # down past the bottom of the window: the table scrolls
            await pilot.press("down")
        await pilot.pause()
        assert table.scroll_y > 0
        built = _spy_rows(table)
        before, start = table.scroll_y, table.cursor_row
        await pilot.press("down")
        await pilot.pause()
        assert table.scroll_y == before + 1  # it scrolled
        assert table.cursor_row == start + 1
        # The row the cursor reached, and the row scrolled into view (the row it left was drawn without the
        # cursor before it reached it, and that line is found again); every other line is kept.
        assert many[start + 1].id in built and len(set(built)) <= 2, built
        incremental = app.export_screenshot()

    fresh_table = LanesTable()  # the same screen as a table that was never scrolled row by row
    fresh = WidgetHost(fresh_table)
    async with fresh.run_test(size=(120, 20)) as pilot:
        fresh_table.sync(many, NOW)
        await pilot.pause()
        fresh_table.focus()
        fresh_table.move_cursor(row=start + 1, animate=False)
        await pilot.pause()
        fresh_table.scroll_to(y=before + 1, animate=False)
        await pilot.pause()
        assert fresh.export_screenshot() == incremental


async def test_a_sync_formats_only_the_lanes_whose_status_changed() -> None:
    """The screen syncs the table on every engine batch and every 2 s: a status object seen before is
    not formatted again (only its elapsed cell is worked out), a new one is."""
    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(120, 36)) as pilot:
        table.sync(LANES, NOW)
        await pilot.pause()
        formatted: list[str] = []
        real = table._row

        def spy(lane: Any, *args: Any, **kwargs: Any) -> Any:
            formatted.append(lane.id)
            return real(lane, *args, **kwargs)

        table._row = spy  # type: ignore[method-assign]
        table.sync(LANES, NOW + 600)  # ten minutes on: elapsed moves, nothing else does
        assert formatted == []
        changed = [*LANES]
        changed[1] = changed[1].with_sample(parse_sample({"idle_s": 5.0, "cpu_percent": 3.0, "rss_bytes": 1024**2}))
        table.sync(changed, NOW + 600)
        assert formatted == [changed[1].id]
        await pilot.pause()
        incremental = app.export_screenshot()

    fresh_table = LanesTable()
    fresh = WidgetHost(fresh_table)
    async with fresh.run_test(size=(120, 36)) as pilot:
        fresh_table.sync(changed, NOW + 600)
        await pilot.pause()
        assert fresh.export_screenshot() == incremental  # elapsed and the new figures, as if built at once


_PIECES = st.lists(st.sampled_from(["a", "line 7: ok", "\n", "\t", "€", "漢字", "\x1b", "\x7f", "x" * 1500]),
                   max_size=12).map("".join)


@given(chunks=st.lists(_PIECES, min_size=1, max_size=6))
def test_the_fast_paths_of_a_batch_measure_and_break_lines_as_the_slow_ones(chunks: list[str]) -> None:
    """Showing a lane's 64 KiB tail cost 27 ms (B1's output latency): lines were broken and measured one
    by one in Python. The C-speed paths (nothing to break; ASCII) must give what the line-by-line code
    gives, for any text, across chunks (a line may span them), and the width `Log` would measure: the
    cleaned text leaves nothing for Log's own processing of a line (tabs, control characters) to do."""
    from lanes_tui.widgets._format import clean_text
    from lanes_tui.widgets._output_lines import widest
    from lanes_tui.widgets.output_pane import MAX_LINE_CHARS

    pane = OutputPane()
    partial = 0
    for chunk in chunks:
        expected: list[str] = []  # the line-by-line breaking, as it always was
        for i, part in enumerate(chunk.split("\n")):
            if i:
                expected.append("\n")
                partial = 0
            while partial + len(part) > MAX_LINE_CHARS:
                expected += [part[:MAX_LINE_CHARS - partial], "\n"]
                part, partial = part[MAX_LINE_CHARS - partial:], 0
            expected.append(part)
            partial += len(part)
        assert pane._guard(chunk) == "".join(expected) and pane._partial == partial
    text = clean_text("".join(chunks))
    lines = text.split("\n")
    assert widest(lines, text) == max(cell_len(Log._process_line(line)) for line in lines)
    assert all(Log._process_line(line) == line for line in lines)
