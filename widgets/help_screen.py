"""The `?` help: a short introduction and every key with what it does.

The keys are data handed in by the App (from its bindings, after the lead's remaps), so the help
cannot drift from what the keys really do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Label, Markdown, Static

from lanes_tui.widgets._dialog import Dialog

INTRO = """\
**lanes-tui** runs AI coding agents side by side, each in its own git worktree (a *lane*).
Watch them live, answer their questions from the **Inbox**, catch quiet and cap-stopped lanes in **Stalls & caps**, and
decide: **accept** (commit and merge), **abandon**, or **recover**. Lanes keep running when you quit.
"""


class HelpScreen(Dialog[None]):
    """Keys as (key, what it does) pairs; escape, q or ? closes."""

    DEFAULT_CSS = """
    HelpScreen #dialog {
        width: 84;
    }
    HelpScreen Markdown {
        margin: 0;
        padding: 0;
    }
    HelpScreen #help-keys {
        height: auto;
        max-height: 20;
        margin-top: 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close help", id="help.close"),
    ]

    def __init__(self, keys: Sequence[tuple[str, str]], *, intro: str = INTRO) -> None:
        super().__init__()
        self.keys = list(keys)
        self.intro = intro

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Help", classes="title")
            yield Markdown(self.intro)
            table: DataTable[Text] = DataTable(id="help-keys", cursor_type="none", zebra_stripes=True)
            yield table
            yield Static("escape / q / ? close", classes="hint")

    def on_mount(self) -> None:
        table = self.query_one("#help-keys", DataTable)
        table.add_column("key", key="key")
        table.add_column("does", key="does")
        for key, does in self.keys:
            table.add_row(Text(key, style="bold"), Text(does), key=key)

    def action_close(self) -> None:
        self.dismiss(None)
