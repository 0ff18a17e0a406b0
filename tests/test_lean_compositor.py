"""A partial update writes the same bytes with `LeanCompositor` as with Textual's own (issue 15, B2)."""

from __future__ import annotations

from functools import partial
from typing import Any

from rich.console import Console
from textual._compositor import ChopsUpdate, Compositor
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static, TabbedContent, TabPane

from lanes_tui.app.lean_compositor import LeanCompositor
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


def _written(compositor: Compositor, regions: list[Region], get_renders: Any) -> tuple[str, int]:
    """The bytes a partial update of `regions` writes, rendered through `get_renders`, and how many
    widgets it rendered."""
    crop = Region.from_union(regions).intersection(compositor.size.region)
    spans = list(compositor._regions_to_spans(regions))
    rendered = {y for y, _, _ in spans}.__contains__
    renders = list(get_renders(crop))
    compositor_get = compositor._get_renders
    compositor._get_renders = lambda _crop: iter(renders)  # type: ignore[method-assign]
    try:
        chops = compositor._render_chops(crop, rendered)
    finally:
        compositor._get_renders = compositor_get  # type: ignore[method-assign]
    update = ChopsUpdate(chops, spans, [cuts[1:] for cuts in compositor.cuts])
    return update.render_segments(Console(color_system="truecolor", width=compositor.size.width)), len(renders)


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
        textual_way = partial(Compositor._get_renders, compositor)
        for widget in (pane, table, screen.query_one("#meters"), screen.query_one("#bar")):
            region = widget.content_region
            for regions in ([region], [Region(region.x, region.y + 1, region.width, 2)],
                            [region, screen.query_one("#bar").region]):
                lean, lean_count = _written(compositor, regions, compositor._get_renders)
                textual, textual_count = _written(compositor, regions, textual_way)
                assert lean == textual
                assert lean  # something was written
                assert lean_count <= textual_count
        # The Output pane's own update (what a following pane asks twice a second) leaves out the
        # table, header, footer, bar and the side column.
        _, lean_count = _written(compositor, [pane.content_region], compositor._get_renders)
        _, textual_count = _written(compositor, [pane.content_region], textual_way)
        assert lean_count < textual_count - 4
