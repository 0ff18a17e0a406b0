"""A compositor that renders, for a partial update, only the widgets the update can show.

Textual's `Compositor._get_renders` picks the widgets for an update by whether their *clip* (what
their container lets show) overlaps it. A direct child of the screen has the whole screen as its
clip, so every frame that only moves the Output pane also rendered the Lanes table, the header, the
footer and the attention bar, and the pane's own hidden scrollbars: 2.1 ms of a 5.2 ms Output frame
at 20 lanes, twice a second (docs/benchmarks.md, B2). A widget whose visible part (its region cut by
its clip) misses the update cannot give it a single cell: the update's chops come only from the
spans inside it, and a chop nobody filled is skipped when the update is written. So those widgets
are left out; a full update (no crop) renders everything, as before. The test is against each region
of the update, not the box round them all: a meters tick repaints rows at the top of the screen and
the Meters pane at the bottom, and the box round both is nearly the whole screen. A widget is also
left out where the update falls inside a widget in front of it: the front widget's cells win every
chop there (the compositor paints front to back and keeps the first strip for each chop), so the
containers behind the Output pane (its tab pane, the tabs, the screen) are not rendered for its frames.
`tests/test_lean_compositor.py` holds partial updates equal to Textual's.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip


class LeanCompositor(Compositor):
    """`Compositor`, with a partial update rendering only the widgets whose visible part it overlaps."""

    def __init__(self) -> None:
        super().__init__()
        self._update_regions: list[Region] = []
        """The regions of the partial update being rendered (empty outside one)."""

    def render_partial_update(self) -> ChopsUpdate | None:
        self._update_regions = list(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._update_regions = []

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        if crop is None or not self._update_regions:
            yield from super()._get_renders(crop)
            return
        overlaps = crop.overlaps
        regions = self._update_regions
        in_front: list[Region] = []  # what the widgets rendered so far show (they are in front)
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            if not overlaps(shown):
                continue
            parts = [update.intersection(shown) for update in regions if update.overlaps(shown)]
            if not parts or all(any(front.contains_region(part) for front in in_front) for part in parts):
                continue  # misses the update, or shows there only behind widgets in front of it
            in_front.append(shown)
            if shown == region:
                yield region, clip, widget.render_lines(Region(0, 0, region.width, region.height))
            else:
                x, y, width, height = shown
                yield region, clip, widget.render_lines(Region(x - region.x, y - region.y, width, height))
