"""A partial update writes the same cells with `LeanCompositor` as with Textual's own (issue 15, B2)."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static, TabbedContent, TabPane

from lanes_tui.fast.compositor import LeanCompositor
from lanes_tui.widgets import OutputPane


class _Dashboardish(Screen[None]):
    """The dashboard's shape: header, table, bar, then a side column beside tabs holding the Output pane."""

    def __init__(self) -> None:
        super().__init__()
        self._compositor = LeanCompositor()

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="table")
        yield Static("attention: 2 questions", id="bar")
        with Horizontal():
            with Vertical(id="side"):
                yield Static("CPU 12 %\nRSS 1.2 GiB", id="meters")
            with TabbedContent():
                with TabPane("Output"):
                    yield OutputPane(id="output")
                with TabPane("Diff"):
                    yield Static("diff")
        yield Footer()


class _Host(App[None]):
    CSS = "#table { height: 8; } #side { width: 30; }"

    def on_mount(self) -> None:
        self.push_screen(_Dashboardish())


def _written(compositor: Compositor, regions: list[Region], textual: bool) -> tuple[dict[Any, Any], int]:
    """What a partial update of `regions` puts on the terminal, the lean way or Textual's (`textual`):
    each cell it writes, with its character and style; and how many widgets it rendered.

    Cells, not bytes: Textual also writes a cursor move for an empty chop at a span's right edge,
    which shows nothing, and a lean update may leave that chop unfilled.
    """
    renders = compositor._get_renders if not textual else partial(Compositor._get_renders, compositor)
    count = [0]

    def counted(crop: Region | None = None) -> Any:
        for render in renders(crop):
            count[0] += 1
            yield render

    compositor._dirty_regions = set(regions)
    compositor._get_renders = counted  # type: ignore[method-assign]
    try:
        update = compositor.render_partial_update()
    finally:
        del compositor._get_renders
    assert update is not None
    cells: dict[tuple[int, int], tuple[str, Any]] = {}
    for y, x1, x2 in update.spans:  # as ChopsUpdate.render_segments walks them
        for end, (x, strip) in zip(update.chop_ends[y], update.chops[y].items(), strict=False):
            if strip is None or x >= x2 or end <= x1:
                continue
            position = x
            for segment in strip.crop(0, min(end, x2) - x):
                for char in segment.text:
                    cells[(y, position)] = (char, segment.style)
                    position += 1
    width = compositor.size.width
    covered = {(y, x) for y, x1, x2 in update.spans for x in range(x1, min(x2, width))}
    assert covered <= cells.keys()  # every cell of the update on the screen is written
    return cells, count[0]


async def test_a_partial_update_writes_what_textual_writes_and_renders_fewer_widgets() -> None:
    app = _Host()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen._compositor, LeanCompositor)
        table = screen.query_one(DataTable)
        table.add_columns("lane", "state", "CPU %")
        for i in range(12):
            table.add_row(f"lane-{i}", "running", f"{i}.5")
        pane = screen.query_one(OutputPane)
        pane.show("lane-0", "".join(f"line {i}\n" for i in range(60)))
        await pilot.pause()
        compositor = screen._compositor
        for widget in (pane, table, screen.query_one("#meters"), screen.query_one("#bar")):
            region = widget.content_region
            for regions in ([region], [Region(region.x, region.y + 1, region.width, 2)],
                            [region, screen.query_one("#bar").region]):
                lean, lean_count = _written(compositor, regions, textual=False)
                textual, textual_count = _written(compositor, regions, textual=True)
                assert lean == textual
                assert lean_count <= textual_count
        # The Output pane's own update (what a following pane asks twice a second) leaves out the
        # table, header, footer, bar and the side column.
        _, lean_count = _written(compositor, [pane.content_region], textual=False)
        _, textual_count = _written(compositor, [pane.content_region], textual=True)
        assert lean_count < textual_count - 4
        # A meters tick: a table row at the top and the Meters pane at the bottom. The box round both is
        # most of the screen; the widgets between them (the Output pane, its tabs) are left out.
        row = table.content_region
        tick = [Region(row.x, row.y + 2, row.width, 1), screen.query_one("#meters").content_region]
        lean, lean_count = _written(compositor, tick, textual=False)
        textual, textual_count = _written(compositor, tick, textual=True)
        assert lean == textual
        assert lean_count < textual_count - 4
