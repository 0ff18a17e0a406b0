"""The Inbox pane: the questions agents asked, across all lanes, oldest first.

Fed with the engine's `QuestionView`s (typed, read once from the inbox's files). Only questions that
still concern the lead are listed: `open` (needs an answer), `answered` (answer written, not yet
picked up by the agent) and `orphaned` (the lane died; shown loudly instead of being silently
dropped). Delivered, cancelled and expired questions are history and are hidden, except a permission
the lead's "allow always" rule answered (`answered_by` "rule"): its state reads `by rule`, so the
lead sees what was allowed without them (the screen drops those once their lane has ended).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.message import Message

from lanes_tui.widgets import _format as fmt
from lanes_tui.widgets._keyed_table import Cell, KeyedTable, Row

if TYPE_CHECKING:  # widgets are given questions; they never load the engine to get them
    from lanes_tui.engine import QuestionView

#: Question states the pane lists, and the theme tone of each.
SHOWN_STATES: Mapping[str, str] = {"open": "warning", "answered": "dim", "orphaned": "error", "by rule": "dim"}


class InboxPane(KeyedTable):
    """Open questions keyed by question id; `sync` with the whole inbox each time it changes."""

    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("lane", "lane"), ("title", "question"), ("age", "age"), ("state", "state"),
        ("kind", "kind"), ("source", "source"),
    )
    TITLE: ClassVar[str] = "Inbox"

    @dataclass
    class QuestionSelected(Message):
        """The highlighted question changed; `qid` is None when the inbox became empty."""

        qid: str | None

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, InboxPane.QuestionSelected)

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._questions: dict[str, QuestionView] = {}

    @property
    def selected_question(self) -> QuestionView | None:
        """The question under the cursor (as given to `sync`), or None."""
        key = self.selected_key
        return self._questions.get(key) if key is not None else None

    @property
    def open_count(self) -> int:
        """Questions still waiting for the lead (open or orphaned), for the attention bar."""
        return sum(1 for q in self._questions.values() if q.state in ("open", "orphaned"))

    def sync(self, questions: Sequence[QuestionView], now: float) -> None:
        """Show the listed questions of `questions`; `now` (wall-clock seconds) gives their age."""
        shown = sorted((q for q in questions if q.state in SHOWN_STATES or by_rule(q)),
                       key=lambda q: (q.question.created, q.question.id))
        self._questions = {q.question.id: q for q in shown}
        rows: list[Row] = [(q.question.id, self._row(q, now)) for q in shown]
        self._apply(rows)

    def tick(self, now: float) -> None:
        """The clock moved to `now`: rewrite only the age cells whose text changed.

        The list changes only when a question comes or goes, so without this an age read `1s` for a
        minute. Each changed age repaints its one row (`_update_cells`); past a minute an age changes
        once a minute (`fmt.elapsed`), so a tick usually repaints the young questions alone.
        """
        for key, view in self._questions.items():
            self._update_cells(key, {"age": _age(view, now)})

    def _row(self, view: QuestionView, now: float) -> tuple[Cell, ...]:
        state = "by rule" if by_rule(view) else view.state
        q = view.question
        # The question comes right after its lane: the side pane is narrow and the text matters most.
        return (
            Cell(q.lane),
            Cell(fmt.truncate(q.title, 70)),
            _age(view, now),
            Cell(state, SHOWN_STATES.get(state, ""), bold=state == "orphaned"),
            Cell(q.kind),
            Cell(q.source),
        )

    def _selection_changed(self, key: str | None) -> None:
        self.post_message(self.QuestionSelected(key))


def _age(view: QuestionView, now: float) -> Cell:
    """How long the question has waited, as the age column shows it."""
    created = view.question.created
    return Cell(fmt.elapsed(now - created) if created else "", right=True)


def by_rule(view: QuestionView) -> bool:
    """A question an "allow always" rule of the lead's answered (`state.allow`), not the lead."""
    return view.answered_by == "rule" and view.state in ("answered", "delivered")
