"""The tabs the first frame does not show (Diff, Gates, Worktrees, Plan): their panes come after it.

Their labels are in the tab bar from the first frame; their panes (and the panes' modules, the Plan's
table, the Worktrees' columns) are built while the engine starts (`app.LanesApp._start_engine`), which is
before any key acts or any poll fills them: the lead's keys are held until the engine is up. A screen
given a running engine builds them at once (`now`), as the tests that drive a ready dashboard expect.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import TabPane

from lanes_tui import widgets

#: tab id -> (its label, the pane's class in `lanes_tui.widgets`, the pane's id), in the tab bar's order.
LATER_TABS: dict[str, tuple[str, str, str]] = {
    "tab-diff": ("Diff", "DiffPane", "diff"),
    "tab-gates": ("Gates", "GatesPane", "gates"),
    "tab-worktrees": ("Worktrees", "WorktreesPane", "worktrees"),
    "tab-plan": ("Plan", "PlanPane", "plan"),
}


def _pane(class_name: str, pane_id: str) -> Widget:
    pane: Widget = getattr(widgets, class_name)(id=pane_id)
    return pane


def later_tabs(*, now: bool) -> Iterator[TabPane]:
    """The tabs, each with its pane when `now`, empty otherwise (`mount_later_panes` fills them)."""
    for tab_id, (label, class_name, pane_id) in LATER_TABS.items():
        yield TabPane(label, *([_pane(class_name, pane_id)] if now else []), id=tab_id)


async def mount_later_panes(screen: Screen[Any]) -> None:
    """Build the panes of the tabs composed empty; a tab that has its pane already is left alone."""
    mounting = []
    for tab_id, (_label, class_name, pane_id) in LATER_TABS.items():
        tab = screen.query_one(f"#{tab_id}", TabPane)
        if not tab.children:
            mounting.append(tab.mount(_pane(class_name, pane_id)))
    for mount in mounting:
        await mount
