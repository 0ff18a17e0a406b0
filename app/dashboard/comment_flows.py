"""The lead's review words from the dashboard: a comment on a hunk of the diff, and lane marks for `T`.

`]` and `[` mark the next or previous hunk of the selected lane's diff (opening the Diff tab); `C`
asks for a comment on the marked hunk and hands it to the engine (`Engine.comment`): a running agent
gets it at once, as `T` sends a line, and a lane that has ended keeps it for its next attempt, which
the Diff tab's border counts. `space` marks lanes; with some marked, `T` sends one message to each
(`hands.HandsFlows`).
"""

from __future__ import annotations

from textual import work
from textual.widgets import TabbedContent

from lanes_tui import widgets  # the dialogs' and the Diff pane's modules load on use
from lanes_tui.app.dashboard.flows import DecisionFlows
from lanes_tui.engine import Hunk, new_comment
from lanes_tui.widgets import LanesTable

__all__ = ["CommentFlows"]

#: The hunk's lines the comment dialog shows (the comment carries up to `state.comments.MAX_HUNK_LINES`).
DIALOG_LINES = 12


class CommentFlows(DecisionFlows):
    """Mixed into the dashboard screen like `DecisionFlows`."""

    def action_hunk(self, step: int) -> None:
        """The next (1) or previous (-1) hunk; the first press on another tab opens the Diff tab."""
        tabs = self.query_one(TabbedContent)
        if tabs.active != "tab-diff":
            tabs.active = "tab-diff"  # TabActivated loads the diff; the next press moves
            return
        pane = self.query_one(widgets.DiffPane)
        if pane.lane_id is None or pane.lane_id != self.selected_lane:
            return  # the selected lane's diff is still loading
        if pane.move_hunk(step) is None:
            self.app.notify(f"{pane.lane_id}'s diff has no hunks to comment on", severity="warning")

    @work(group="comment", exclusive=True)
    async def action_comment_hunk(self) -> None:
        lane = self._need_lane()
        if lane is None:
            return
        pane = self.query_one(widgets.DiffPane)
        hunk = pane.marked_hunk if pane.lane_id == lane else None
        if hunk is None:
            self.app.notify("mark a hunk first: ] and [ move between the hunks of the Diff tab (d)",
                            severity="warning")
            return
        status = self.lanes.get(lane)
        goes = ("it goes to the running agent now, as T sends a line" if status is not None and status.live else
                "the lane has ended: it is kept for its next attempt (r, then l, relaunches it with your comments)")
        lines = [f"    {line}" for line in hunk.lines[:DIALOG_LINES]]
        if len(hunk.lines) > DIALOG_LINES:
            lines.append(f"    … {len(hunk.lines) - DIALOG_LINES} more lines (the agent gets up to 40)")
        text = await self.app.push_screen_wait(widgets.ReasonModal(f"Comment on {hunk.file} {hunk.header}",
                                                           [*lines, goes], placeholder="your comment"))
        if text is None:
            return
        await self._comment(lane, hunk, text)

    async def _comment(self, lane: str, hunk: Hunk, text: str) -> None:
        engine = self.lanes_app.engine
        outcome = await self._guard(lambda: engine.comment(lane, new_comment(hunk.file, hunk.header, hunk.lines, text)))
        if outcome is None:
            return
        self.app.notify(outcome.describe(), title="Comment sent" if outcome.delivered else "Comment kept",
                        severity="information" if outcome.delivered else "warning", timeout=10)
        pane = self.query_one(widgets.DiffPane)
        if not outcome.delivered and pane.lane_id == lane:
            pane.set_kept(outcome.kept)

    def action_mark_lane(self) -> None:
        lane = self._need_lane()
        if lane is not None:
            self.query_one(LanesTable).toggle_mark(lane)
