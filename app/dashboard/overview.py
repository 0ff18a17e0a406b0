"""The Lanes pane for many lanes: the sort key and the `/` filter line (`widgets._lane_order` decides).

Mixed into the dashboard screen like `flows.DecisionFlows`. The table keeps the order, the filter and
the seen marks itself; this only wires the keys and the filter line to it.
"""

from __future__ import annotations

from textual.screen import Screen

from lanes_tui import widgets  # the filter dialog's module loads on its key
from lanes_tui.widgets import LanesTable

SORT_WORDS = {"oldest": "oldest first", "newest": "newest first"}


class OverviewFlows(Screen[None]):
    """`O` cycles the sort order, `/` opens the filter line over the footer."""

    def action_sort_lanes(self) -> None:
        mode = self.query_one(LanesTable).cycle_sort()
        self.app.notify(f"lanes sorted {SORT_WORDS.get(mode, 'by ' + mode)}", timeout=3)

    def action_filter_lanes(self) -> None:
        table = self.query_one(LanesTable)
        self.app.push_screen(widgets.LaneFilter(table.filter_text, table.set_filter), self._filter_closed)

    def _filter_closed(self, text: str | None) -> None:
        table = self.query_one(LanesTable)
        table.set_filter(text or "")
        table.focus()
