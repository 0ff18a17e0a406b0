"""The `?` help: a short introduction and every key with what it does.

The keys are data handed in by the App (from its bindings, after the lead's remaps), so the help
cannot drift from what the keys really do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import HorizontalGroup, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Label, Markdown, Static

from lanes_tui.widgets._dialog import Dialog

INTRO = """\
**lanes-tui** runs AI coding agents side by side, each in its own git worktree (a *lane*).
Watch them live, answer their questions from the **Inbox**, catch quiet and cap-stopped lanes in **Stalls & caps**, and
decide: **accept** (commit and merge), **abandon**, or **recover**. Lanes keep running when you quit.
"""


class HelpScreen(Dialog[None]):
    """Keys as (key, what it does) pairs; escape, q or ? closes.

    One row of two Statics per key, not a DataTable: a table cell is one line, so a description
    longer than the dialog was cut; a Static wraps to whatever width the dialog has.
    """

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
    HelpScreen .help-row {
        height: auto;
    }
    HelpScreen .help-row.-odd {
        background: $boost;
    }
    HelpScreen .help-head {
        text-style: bold;
        background: $panel;
    }
    HelpScreen .help-key {
        text-style: bold;
        padding: 0 1;
    }
    HelpScreen .help-does {
        width: 1fr;
        height: auto;
        padding: 0 1;
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
        key_width = max((len(key) for key, _ in self.keys), default=3) + 2  # the padding
        with Vertical(id="dialog"):
            yield Label("Help", classes="title")
            yield Markdown(self.intro)
            with VerticalScroll(id="help-keys"):
                yield self._row("key", "does", key_width, classes="help-row help-head")
                for index, (key, does) in enumerate(self.keys):
                    yield self._row(key, does, key_width, classes="help-row -odd" if index % 2 else "help-row")
            yield Static("escape / q / ? close", classes="hint")

    @staticmethod
    def _row(key: str, does: str, key_width: int, *, classes: str) -> HorizontalGroup:
        """One key and what it does, as plain text (help texts hold `[keys]`, never markup)."""
        key_cell = Static(Content(key), classes="help-key")
        key_cell.styles.width = max(key_width, 5)
        return HorizontalGroup(key_cell, Static(Content(does), classes="help-does"), classes=classes)

    @property
    def row_count(self) -> int:
        """How many keys the help lists."""
        return len(self.query(".help-row").exclude(".help-head"))

    def action_close(self) -> None:
        self.dismiss(None)
