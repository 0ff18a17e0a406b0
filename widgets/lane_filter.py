"""The Lanes pane's filter line: `/` opens it at the bottom, the pane filters as you type, enter keeps
the filter, escape clears it.

A transparent modal screen rather than an Input on the dashboard: the dashboard's priority keys (`q`
quits, enter answers) would otherwise fire while the lead types "queued" or presses enter, and the
lanes stay visible, filtered live, underneath. Only the text is here; each change goes to the
callback the screen gives (`LanesTable.set_filter`, which decides what matches).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Input


class LaneFilter(ModalScreen[str]):
    """Returns the filter to keep (enter) or "" (escape); `on_change` gets every edit as it happens."""

    DEFAULT_CSS = """
    LaneFilter {
        background: transparent;
        align: left bottom;
    }
    LaneFilter > #lane-filter, LaneFilter > #lane-filter:focus {
        dock: bottom;
        width: 100%;
        height: 1;
        border: none;
        padding: 0 1;
        background: $panel;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear", "Clear the filter", id="filter.clear"),
    ]

    def __init__(self, text: str, on_change: Callable[[str], None]) -> None:
        super().__init__()
        self.text = text
        self.on_change = on_change

    def compose(self) -> ComposeResult:
        yield Input(value=self.text, placeholder="/ filter lanes by id, task, state or provider  ·  enter keep  ·  "
                                                 "escape clear", id="lane-filter")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.on_change(event.value)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_clear(self) -> None:
        self.on_change("")
        self.dismiss("")
