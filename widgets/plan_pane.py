"""The Plan pane: the tickets of the open plans, what each waits for, and the ones the lead must take over.

Fed with the engine's `TicketStatus` list (`sync(tickets)`, every few seconds and after `P`); it never
reads a plan file. One row per ticket, keyed `plan/ticket`, in the order given (the plan's own
order). A `takeover` ticket (its attempts are used up: relaunch with a note, amend the plan or
abandon) is the one the lead must act on, so its whole row is in `$error`; it also counts in the
attention bar (the screen counts it from the same list). With no plan open the pane says how to
open one instead of showing an empty table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from lanes_tui.widgets import _format as fmt
from lanes_tui.widgets._keyed_table import Cell, KeyedTable, Row

if TYPE_CHECKING:  # widgets are given ticket statuses; they never load the engine to get them
    from lanes_tui.engine import TicketStatus

#: A ticket state's tone; `takeover` colours the whole row.
STATE_TONES: Mapping[str, str] = {
    "blocked": "dim", "waiting": "", "running": "", "ready": "success", "accepted": "dim",
    "takeover": "error", "cancelled": "dim",
}
EMPTY_TEXT = ("No plan is open. Launch one with `lanes-tui plan launch FILE` (see docs/plans.md); "
              "its tickets show here, and P starts those that can start now.")


class PlanTable(KeyedTable):
    """The tickets' table inside the Plan pane."""

    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("plan", "plan"), ("ticket", "ticket"), ("state", "state"), ("lane", "lane"),
        ("attempts", "attempts"), ("blocked_by", "blocked by"), ("owned", "owned files"),
    )
    TITLE: ClassVar[str] = "Plan"

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.border_subtitle = "P launch what can start now"
        self._details: dict[str, str] = {}
        """Row key → the ticket's title, reason and scope, for the tooltip."""

    def sync(self, tickets: Sequence[TicketStatus]) -> None:
        self._details = {_key(t): _details(t) for t in tickets}
        rows: list[Row] = [(_key(t), _row(t)) for t in tickets]
        self._apply(rows)
        self._set_tooltip()

    def _selection_changed(self, key: str | None) -> None:
        self._set_tooltip()

    def _set_tooltip(self) -> None:
        text = self._details.get(self.selected_key or "")
        # Content, not str: titles and reasons come from a plan file and may hold brackets.
        self.tooltip = Content(text) if text else None


class PlanPane(Vertical):
    """`sync(tickets)` with every open plan's tickets; an empty list shows the empty-state text."""

    DEFAULT_CSS = """
    PlanPane {
        height: 1fr;
    }
    PlanPane > #plan-empty {
        height: auto;
        padding: 1 2;
        color: $text-muted;
        display: none;
    }
    PlanPane.-empty > #plan-empty {
        display: block;
    }
    PlanPane.-empty > PlanTable {
        display: none;
    }
    """

    empty: reactive[bool] = reactive(True)
    """No ticket to show (no plan open): the watcher swaps the table for the empty-state text."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._takeovers = 0

    def compose(self) -> ComposeResult:
        yield Static(Content(EMPTY_TEXT), id="plan-empty")
        yield PlanTable(id="plan-table")

    def on_mount(self) -> None:
        self.set_class(self.empty, "-empty")

    def watch_empty(self, empty: bool) -> None:
        self.set_class(empty, "-empty")

    @property
    def table(self) -> PlanTable:
        return self.query_one(PlanTable)

    @property
    def takeover_count(self) -> int:
        """Tickets shown in `takeover`: the lead must act on each."""
        return self._takeovers

    def sync(self, tickets: Sequence[TicketStatus]) -> None:
        self._takeovers = sum(1 for t in tickets if t.state == "takeover")
        self.empty = not tickets
        self.table.sync(tickets)


def _key(ticket: TicketStatus) -> str:
    return f"{ticket.plan}/{ticket.id}"


def _row(t: TicketStatus) -> tuple[Cell, ...]:
    takeover = t.state == "takeover"
    tone = "error" if takeover else ""
    plan = t.plan + (f" · {t.repo}" if t.repo else "")
    return (
        Cell(plan, tone),
        Cell(t.id, tone, bold=takeover),
        Cell(t.state, STATE_TONES.get(t.state, ""), bold=takeover),
        Cell(t.lane or "", tone),
        Cell(f"{t.attempts}/{t.max_attempts}", "error" if takeover else "", right=True),
        Cell(fmt.truncate(", ".join(t.blocked_by), 40), tone),
        Cell(str(t.owned_files), tone, right=True),
    )


def _details(t: TicketStatus) -> str:
    """Title, why it is in its state and its scope, one a line (a plan file may hold controls)."""
    lines = [fmt.clean_text(t.title)]
    if t.reason:
        lines.append(f"{t.state}: {fmt.clean_text(t.reason)}")
    if t.scope:
        lines.append("scope: " + fmt.truncate(", ".join(t.scope), 200))
    return "\n".join(line for line in lines if line)
