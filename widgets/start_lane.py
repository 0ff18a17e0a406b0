"""The start-a-lane form: prompt, task type, provider (or the chain's default), optional task id.

Returns `{"prompt", "task_type", "lane", "slug"}` — the arguments of `lanes-tui run` (`lane` is
`--lane PROVIDER` or None for the chain; `slug` is `--id` or None). The form checks only what the
lead can fix in place (an empty prompt, a task id with characters no id may have); the engine
validates everything again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from lanes_tui.widgets._dialog import Dialog

#: The task-slug rule of engine.ids (letters, digits, `-`, `_`, at most 58), copied so widgets need
#: no engine import; the engine refuses a bad id anyway.
SLUG_RE = re.compile(r"^[A-Za-z0-9_-]{1,58}$")
CHAIN_DEFAULT = "__chain__"


class StartLaneModal(Dialog[dict[str, Any] | None]):
    """ctrl+s or Start submits; escape or Cancel → None; an empty prompt shows an inline error."""

    DEFAULT_CSS = """
    StartLaneModal #prompt {
        height: 8;
    }
    StartLaneModal .field-row {
        height: auto;
        margin-top: 1;
    }
    StartLaneModal .field-row > Select {
        width: 1fr;
    }
    StartLaneModal .field-row > Input {
        width: 1fr;
    }
    StartLaneModal .buttons {
        height: auto;
        margin-top: 1;
        align-horizontal: right;
    }
    StartLaneModal .buttons > Button {
        margin-left: 2;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Start the lane", id="start.submit", priority=True),
        Binding("escape", "cancel", "Cancel", id="start.cancel"),
    ]

    def __init__(self, task_types: Sequence[str], providers: Sequence[str], *,
                 default_type: str = "backend") -> None:
        super().__init__()
        self.task_types = list(task_types) or [default_type]
        self.providers = list(providers)
        self.default_type = default_type if default_type in self.task_types else self.task_types[0]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Start a lane", classes="title")
            yield Label("Prompt")
            yield TextArea(id="prompt", soft_wrap=True, show_line_numbers=False)
            with Horizontal(classes="field-row"):
                yield Select([(t, t) for t in self.task_types], value=self.default_type, allow_blank=False,
                             id="task-type", prompt="task type")
                yield Select([("chain default", CHAIN_DEFAULT), *((p, p) for p in self.providers)],
                             value=CHAIN_DEFAULT, allow_blank=False, id="provider", prompt="provider")
                yield Input(placeholder="task id (optional)", id="slug")
            yield Static("", classes="error", id="start-error")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Start", variant="primary", id="start")
            yield Static("ctrl+s start  ·  escape cancel", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#prompt", TextArea).focus()

    def action_submit(self) -> None:
        prompt = self.query_one("#prompt", TextArea).text
        slug = self.query_one("#slug", Input).value.strip()
        error = ""
        if not prompt.strip():
            error = "the prompt is empty: say what the agent should do"
        elif slug and not SLUG_RE.match(slug):
            error = "a task id is 1-58 letters, digits, '-' or '_'"
        if error:
            self.query_one("#start-error", Static).update(error)
            self.query_one("#slug" if prompt.strip() else "#prompt").focus()
            return
        provider = self.query_one("#provider", Select).value
        self.dismiss({
            "prompt": prompt,
            "task_type": str(self.query_one("#task-type", Select).value),
            "lane": None if provider == CHAIN_DEFAULT or provider is Select.NULL else str(provider),
            "slug": slug or None,
        })

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#start")
    def _start_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_submit()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_cancel()

    @on(Input.Submitted, "#slug")
    def _slug_submitted(self, event: Input.Submitted) -> None:
        """enter in the last field starts the lane, as a form would."""
        event.stop()
        self.action_submit()
