"""The Plan pane (issue 11, item 7): the widget with literal tickets, and the dashboard with a fake
engine that has (or has not yet) `plan_statuses()` and `advance_plans()`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from textual.widgets import TabbedContent

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.engine.plans.model import TicketStatus
from lanes_tui.widgets import AttentionBar, PlanPane
from lanes_tui.widgets.plan_pane import PlanTable
from tests.fake_engine import FakeEngine, lane
from tests.snapshot_apps.widget_apps import WidgetHost

TICKETS = [
    TicketStatus("shop", "schema", "Add the orders table", "accepted", lane="schema-a1", attempts=1, owned_files=2),
    TicketStatus("shop", "pay", "Card payments", "takeover", lane="pay-a2", attempts=2, owned_files=3,
                 reason="attempts used up", scope=("src/pay/",)),
    TicketStatus("shop", "docs", "Docs", "blocked", blocked_by=("pay",), owned_files=1),
]


def notes(app: Any) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


async def test_the_pane_shows_the_empty_state_then_the_tickets() -> None:
    app = WidgetHost(PlanPane())
    async with app.run_test(size=(120, 20)) as pilot:
        pane = app.query_one(PlanPane)
        table = app.query_one(PlanTable)
        assert pane.has_class("-empty") and not table.display
        assert "No plan is open" in str(app.query_one("#plan-empty").render())
        pane.sync(TICKETS)
        await pilot.pause()
        assert not pane.has_class("-empty") and table.display
        assert [table.get_cell(key, "ticket").plain for key in table.row_keys] == ["schema", "pay", "docs"]
        row = table.get_row("shop/pay")
        assert [cell.plain for cell in row] == ["shop", "pay", "takeover", "pay-a2", "2/2", "", "3"]
        styles = [span.style for span in row[2].spans]
        assert styles and all(getattr(style, "bold", False) for style in styles)  # takeover: bold, in $error
        assert table.get_row("shop/docs")[5].plain == "pay"
        assert pane.takeover_count == 1
        before = table.cell_updates
        pane.sync([TICKETS[0], dataclasses.replace(TICKETS[1], state="running", attempts=2), TICKETS[2]])
        await pilot.pause()
        assert table.cell_updates - before == 7  # the one changed row, not a rebuild
        assert pane.takeover_count == 0
        pane.sync([])
        await pilot.pause()
        assert pane.has_class("-empty")


class PlanEngine(FakeEngine):
    """A fake engine with the plan scheduler's two methods."""

    tickets: list[TicketStatus]

    def plan_statuses(self) -> list[TicketStatus]:  # a plain method: the app runs it in a thread
        self.calls.append(("plan_statuses", None))
        return list(self.tickets)

    async def advance_plans(self) -> list[str]:
        self.calls.append(("advance_plans", None))
        self.tickets = [dataclasses.replace(t, state="running", lane="docs-a1") if t.id == "docs" else t
                        for t in self.tickets]
        return ["docs-a1"]


async def test_the_dashboard_feeds_the_pane_counts_takeovers_and_p_advances(tmp_path: Path) -> None:
    engine = PlanEngine(tmp_path / "x", [lane("ready-a1", "ready")])
    engine.tickets = list(TICKETS)
    app = LanesApp(Path("/repo"), engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.3)
        assert app.screen.query_one(AttentionBar).counts == (0, 0, 1, 1)
        assert "1 ticket to take over" in str(app.screen.query_one(AttentionBar).render())
        assert app.title.endswith("⚑1")
        app.screen.query_one(TabbedContent).active = "tab-plan"
        await pilot.pause()
        table = app.screen.query_one(PlanTable)
        assert table.row_count == 3 and table.get_row("shop/docs")[2].plain == "blocked"
        await pilot.press("P")
        await pilot.pause(0.3)
        assert ("advance_plans", None) in engine.calls
        assert "Plan: started 1: docs-a1" in notes(app)
        assert table.get_row("shop/docs")[2].plain == "running"


async def test_without_a_plan_scheduler_the_pane_is_empty_and_p_says_so(tmp_path: Path) -> None:
    engine = FakeEngine(tmp_path / "x", [lane("ready-a1", "ready")])
    app = LanesApp(Path("/repo"), engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.2)
        assert app.screen.query_one(PlanPane).has_class("-empty")
        await pilot.press("P")
        await pilot.pause(0.2)
        assert any("no plan scheduler yet" in n for n in notes(app))
        assert app.screen.query_one(AttentionBar).counts == (0, 0, 1, 0)
