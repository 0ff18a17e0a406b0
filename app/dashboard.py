"""The dashboard App: subscribes to the engine and shows the lanes (the full panes come next)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Header

from lanes_tui.engine.engine import Engine
from lanes_tui.engine.events import LaneChanged, LaneRemoved, MetersSampled

COLUMNS = ("lane", "state", "result", "provider", "idle", "cpu%", "rss")


class LanesApp(App[None]):
    TITLE = "lanes-tui"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "Quit (lanes keep running)", id="quit")]

    def __init__(self, repo: Path, *, demo: bool = False, engine: Engine | None = None) -> None:
        super().__init__()
        self.repo = repo
        self.engine = engine or Engine(repo)
        self.sub_title = f"{repo}{' (demo)' if demo else ''}"

    def compose(self) -> ComposeResult:
        yield Header()
        table: DataTable[str] = DataTable(id="lanes", cursor_type="row")
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        yield Footer()

    async def on_mount(self) -> None:
        await self.engine.start()
        for status in self.engine.lanes():
            self._show(status)
        self._follow()

    @work(group="engine-events", exclusive=True)
    async def _follow(self) -> None:
        async for event in self.engine.events():
            if isinstance(event, LaneChanged):
                self._show(dict(event.status))
            elif isinstance(event, MetersSampled):
                self._update_meters(event.lane_id, dict(event.sample))
            elif isinstance(event, LaneRemoved):
                table = self.query_one("#lanes", DataTable)
                if event.lane_id in table.rows:
                    table.remove_row(event.lane_id)

    def _show(self, status: dict[str, Any]) -> None:
        table = self.query_one("#lanes", DataTable)
        values = _row(status)
        if status["id"] in table.rows:
            for column, value in zip(COLUMNS, values, strict=True):
                table.update_cell(status["id"], column, value)
        else:
            table.add_row(*values, key=status["id"])

    def _update_meters(self, lane_id: str, sample: dict[str, Any]) -> None:
        table = self.query_one("#lanes", DataTable)
        if lane_id in table.rows:
            table.update_cell(lane_id, "idle", f"{sample.get('idle_s', 0):.0f}s")
            table.update_cell(lane_id, "cpu%", f"{sample.get('cpu_percent', 0):.0f}")
            table.update_cell(lane_id, "rss", f"{sample.get('rss_bytes', 0) / 1e6:.0f}M")

    async def on_unmount(self) -> None:
        await self.engine.aclose()


def _row(status: dict[str, Any]) -> tuple[str, ...]:
    idle = status.get("idle_s")
    return (status["id"], status["state"], status.get("result") or "", status.get("provider") or "",
            "" if idle is None else f"{idle:.0f}s", f"{status.get('cpu_percent') or 0:.0f}",
            f"{(status.get('rss_bytes') or 0) / 1e6:.0f}M")
