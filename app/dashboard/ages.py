"""The dashboard's one clock: every second the ages on screen move, and nothing else is repainted.

The Inbox's ages, the Stalls pane's idle times and the attention bar's oldest question are worked out
from the wall clock, but the panes are synced only when the engine says something changed: a question
read `1s` for a minute. One 1-second interval (not one per pane) rewrites just those cells; a cell whose
text did not change is not touched, so a tick repaints the rows whose age moved and no other
(`KeyedTable._update_cells`). While a dialog is open the tick is skipped, as the polls are.
"""

from __future__ import annotations

from typing import ClassVar

from textual.screen import Screen
from textual.timer import Timer

from lanes_tui.engine import LaneStatus, QuestionView
from lanes_tui.widgets import AttentionBar, InboxPane, StallsPane

__all__ = ["AgeClock", "oldest_open"]


def oldest_open(questions: list[QuestionView], lanes: dict[str, LaneStatus]) -> QuestionView | None:
    """The open question that has waited longest, leaving out those of a lane relaunched as a newer
    attempt (its new attempt asks again if it must)."""
    waiting = [q for q in questions if q.state == "open"
               and not ((lane := lanes.get(q.question.lane)) is not None and lane.superseded_by)]
    return min(waiting, key=lambda q: (q.question.created, q.question.id), default=None)


class AgeClock(Screen[None]):
    """Mixed into the dashboard screen: needs `questions`, `lanes` and `_now()` (the screen's clock)."""

    lanes: dict[str, LaneStatus]
    questions: list[QuestionView]
    tick_every_s: ClassVar[float] = 1.0
    """How often the ages move: their finest unit is the second."""

    def _now(self) -> float:
        raise NotImplementedError

    age_timer: Timer | None = None
    """The one interval that moves the ages (`_start_clock`)."""

    def _start_clock(self) -> None:
        self.age_timer = self.set_interval(self.tick_every_s, self.tick_ages, name="ages")

    def tick_ages(self, now: float | None = None) -> None:
        """Move every age on screen to `now` (the screen's clock when None)."""
        if self.app.screen is not self:  # a dialog covers the panes: they catch up at the next tick
            return
        now = self._now() if now is None else now
        self.query_one(InboxPane).tick(now)
        self.query_one(StallsPane).tick(now)
        self._name_oldest(now)

    def _name_oldest(self, now: float) -> None:
        """The attention bar names the oldest open question, its lane and its age (the same text: no repaint)."""
        oldest = oldest_open(self.questions, self.lanes)
        bar = self.query_one(AttentionBar)
        if oldest is None:
            bar.set_oldest(None)
        else:
            question = oldest.question
            bar.set_oldest(question.lane, question.title, now - question.created if question.created else 0.0)
