"""The dashboard's layout by terminal size: wide, compact, or a notice that asks for more room.

At 80×24 the wide layout gave the Inbox and Stalls panes no rows at all (an open question was only a
count), the Lanes table four columns (`state` cut to `accep`) and a cut footer; at 100×30 one row each.
So below `WIDE` (120×32) the side panes become tabs beside Output: the bottom half shows one pane at a
time, full width, and the attention bar names the oldest open question (`ages`). Measured at 80×24 (the
panes' regions in a test app): the side panes stacked under Output gave Output 4 rows (2 lines of text)
and Inbox and Stalls 2 rows each, their borders and nothing inside; as tabs, the pane shown gets 10–11
rows and all 80 columns (the Inbox then shows lane, question, age and state in full). The Lanes
table keeps id, state and why below 100 columns, and the clocks too up to 120 (`LanesTable.*_COLUMNS`);
the footer keeps the keys to answer and decide (`COMPACT_FOOTER`). Below `SMALLEST` (60×18) nothing
fits: a notice says what size is needed and the app keeps running (the lanes belong to their
supervisors), and a resize back restores it.

Switched live at every resize. No widget is mounted, moved or removed: the side panes stay where they
are composed and CSS classes on the screen decide what shows (`lanes.tcss`), with three empty tabs
(`SIDE_TABS`) that stand for them, shown only while compact. So the selected lane, each pane's cursor
and the Output's scroll survive every switch, and the focus too (a pane focused when its place goes
brings its tab up; the focus before the notice comes back after it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from textual import events, on
from textual.binding import ActiveBinding
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static, TabbedContent, TabPane

from lanes_tui.widgets import InboxPane, LanesTable

__all__ = ["SIDE_TABS", "SMALLEST", "WIDE", "CompactLayout", "lane_columns", "layout_for"]

#: From this size up (columns, rows), the side panes have a column of their own.
WIDE = (120, 32)
#: Below this size (either way) the notice replaces the dashboard.
SMALLEST = (60, 18)
#: Below this width the Lanes table keeps only `NARROW_COLUMNS`.
NARROW_WIDTH = 100
#: The tabs that stand for the side panes while compact: tab id → (label, pane id).
SIDE_TABS = {"tab-inbox": ("Inbox", "inbox"), "tab-stalls": ("Stalls", "stalls"), "tab-meters": ("Meters", "meters")}
MODES = ("wide", "compact", "tiny")
#: The footer's keys while compact (binding ids): answer, decide, help, quit. At 80 columns all eleven
#: did not fit and `? Help` and `q Quit` were the ones cut; the others stay on their keys and in `?`.
COMPACT_FOOTER = frozenset({"accept", "abandon", "recover", "answer_yes", "answer_no", "help", "quit"})
#: The Inbox's columns below `NARROW_WIDTH`: which lane asks what, since when, and where it stands.
INBOX_NARROW = ("lane", "title", "age", "state")


def layout_for(size: Size) -> str:
    """`wide`, `compact` or `tiny` for a terminal of `size`."""
    width, height = size
    if width < SMALLEST[0] or height < SMALLEST[1]:
        return "tiny"
    if width < WIDE[0] or height < WIDE[1]:
        return "compact"
    return "wide"


def lane_columns(width: int) -> tuple[str, ...] | None:
    """The Lanes columns for a terminal `width` columns wide (None: all of them)."""
    if width < NARROW_WIDTH:
        return LanesTable.NARROW_COLUMNS
    if width < WIDE[0]:
        return LanesTable.MEDIUM_COLUMNS
    return None


def size_notice(size: Size) -> str:
    return (f"lanes-tui needs a terminal of at least {SMALLEST[0]}×{SMALLEST[1]}; this one is "
            f"{size.width}×{size.height}.\nMake it larger: the dashboard comes back as it was.\n"
            "The lanes keep running; q quits.")


class CompactLayout(Screen[None]):
    """Mixed into the dashboard screen; `side_tabs()` is composed into its TabbedContent, `size_notice_widget()`
    onto the screen, and `_start_layout()` is called once the panes are mounted."""

    size_mode = ""
    """The layout in use: one of `MODES` ("" until the first `_fit`, which then applies one in full)."""
    _focus_before_notice: Widget | None = None
    _laid_out = False
    """Set by `_start_layout` (in the screen's `on_mount`): resizes before it find no panes to lay out."""

    def side_tabs(self) -> Iterator[TabPane]:
        """The empty tabs that stand for the side panes while compact (hidden while wide)."""
        for tab_id, (label, _pane) in SIDE_TABS.items():
            yield TabPane(label, id=tab_id, classes="side-tab")

    def size_notice_widget(self) -> Static:
        return Static("", id="size-notice")

    def _start_layout(self) -> None:
        """The panes are mounted: take the layout for the terminal's size, and follow it from now on."""
        self._laid_out = True
        self._fit(self.app.size)

    @on(events.Resize)
    def _resized(self, event: events.Resize) -> None:
        """Every resize, and the one a screen gets when a dialog over it closes after a resize."""
        if self._laid_out:
            self._fit(event.size)

    def _fit(self, size: Size) -> None:
        """Take the layout for `size` (nothing changes when it is already the one in use)."""
        try:
            tabs = self.query_one("#detail", TabbedContent)
            self.query_one(LanesTable).show_columns(lane_columns(size.width))
            self.query_one(InboxPane).show_columns(INBOX_NARROW if size.width < NARROW_WIDTH else None)
        except NoMatches:  # not composed yet, or closing
            return
        mode = layout_for(size)
        if mode == "tiny":
            self.query_one("#size-notice", Static).update(size_notice(size))
        if mode == self.size_mode:
            return
        was, self.size_mode = self.size_mode, mode
        if was == "tiny":
            self._leave_tiny()
        if mode == "tiny":
            self._focus_before_notice = self.focused
        self.set_class(mode == "compact", "-compact")
        self.set_class(mode == "tiny", "-tiny")
        self.query_one(Footer).compact = mode != "wide"
        if mode == "wide":
            if tabs.active in SIDE_TABS:
                tabs.active = "tab-output"
            for tab_id in SIDE_TABS:
                tabs.hide_tab(tab_id)
            self._show_side(None)
        elif mode == "compact":
            for tab_id in SIDE_TABS:
                tabs.show_tab(tab_id)
            side = self._side_pane_focused()
            if side is not None:  # its column went: its tab keeps it on screen, and the focus in it
                tabs.active = side
            self._show_side(tabs.active)
        self.refresh_bindings()  # the keys behind the notice come and go with it (`check_action`)

    def _leave_tiny(self) -> None:
        focused, self._focus_before_notice = self._focus_before_notice, None
        if focused is not None and focused.is_attached:
            self.call_after_refresh(focused.focus)

    def _side_pane_focused(self) -> str | None:
        """The side tab whose pane has the focus, if one has it."""
        focused = self.focused
        for tab_id, (_label, pane) in SIDE_TABS.items():
            if focused is not None and any(node.id == pane for node in focused.ancestors_with_self):
                return tab_id
        return None

    @on(TabbedContent.TabActivated, "#detail")
    def _side_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._show_side(event.pane.id)

    def _show_side(self, tab_id: Any) -> None:
        """While compact, a side tab shows its pane under the tab strip (`-side-…` classes, `lanes.tcss`)."""
        shown = SIDE_TABS[tab_id][1] if self.size_mode == "compact" and tab_id in SIDE_TABS else None
        self.set_class(shown is not None, "-side")
        for _label, pane in SIDE_TABS.values():
            self.set_class(pane == shown, f"-side-{pane}")

    def action_show_side(self, tab_id: str) -> None:
        """Keys 6–8 (`keys.py`): a side pane wherever the layout put it. While compact its tab comes
        up; in either layout the focus goes into it, so the arrows move in it at once."""
        if tab_id not in SIDE_TABS:
            return
        if self.size_mode == "compact":
            self.query_one("#detail", TabbedContent).active = tab_id
            self._show_side(tab_id)
        pane = self.query_one(f"#{SIDE_TABS[tab_id][1]}", Widget)
        target = pane if pane.can_focus else next((w for w in pane.query("*") if w.can_focus), None)
        if target is not None:
            self.call_after_refresh(target.focus)

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """While compact, the footer shows only `COMPACT_FOOTER`'s keys of this screen (every key still works)."""
        active = super().active_bindings
        if self.size_mode != "compact":
            return active
        return {key: ActiveBinding(found.node, dataclasses.replace(found.binding, show=False), found.enabled,
                                   found.tooltip)
                if found.node is self and found.binding.show and found.binding.id not in COMPACT_FOOTER else found
                for key, found in active.items()}

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Behind the size notice the dashboard's keys do nothing (`q` is the App's and still quits)."""
        if self.size_mode == "tiny":
            return False
        return super().check_action(action, parameters)
