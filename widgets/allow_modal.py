""""Allow always" for a permission prompt: the pattern later requests of the lane are allowed by.

One line to edit, prefilled with the request's own subject (the Bash command, the file path): enter
as it is allows exactly that again; a glob (`pytest *`) allows the requests it matches; an empty line
allows every request of the tool in this lane. The engine writes the rule (`state.allow`); this
dialog only says what each choice means and returns it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, Label, Static

from lanes_tui.widgets._dialog import Dialog, plain_lines

if TYPE_CHECKING:  # given the question; it never asks the engine for one
    from lanes_tui.engine import QuestionView

__all__ = ["AllowChoice", "AllowRuleModal"]


@dataclass(frozen=True)
class AllowChoice:
    """The lead's rule: None allows every request of the tool in the lane."""

    pattern: str | None


class AllowRuleModal(Dialog[AllowChoice | None]):
    """Edit the pattern; enter → AllowChoice, escape → None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="allow.cancel"),
    ]

    def __init__(self, view: QuestionView) -> None:
        super().__init__()
        self.question = view.question
        correlation = self.question.correlation
        self.tool = str(correlation.get("tool_name") or "the tool")
        subject = correlation.get("subject")
        self.subject = subject if isinstance(subject, str) else ""

    def compose(self) -> ComposeResult:
        lane = self.question.lane
        with Vertical(id="dialog"):
            yield Label(Content(f"Allow always in {lane}?"), classes="title")
            yield from plain_lines([
                self.question.title,
                f"This request is allowed now. Later {self.tool} requests of {lane} that the pattern matches are "
                "allowed without asking (the inbox shows them answered by rule).",
                "The pattern is a glob on what the request does (a command, a path, a URL), like pytest *; "
                "for Bash a wildcard never matches a command holding ; & | $ ` < > ( ) or a newline.",
            ])
            yield Input(value=self.subject, placeholder=f"empty: every {self.tool} request of this lane",
                        id="pattern", select_on_focus=False)  # the cursor at the end: edit, not retype
            yield Static("enter allow  ·  an empty pattern allows the whole tool  ·  escape cancel", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#pattern", Input).focus()

    @on(Input.Submitted, "#pattern")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(AllowChoice(event.value.strip() or None))

    def action_cancel(self) -> None:
        self.dismiss(None)
