"""The conversation view of a structured lane (`t` on a claude stream-json lane): read it, type into it.

The transcript is the lane's conversation so far: the task, the agent's messages, its tool calls and
results, and what the lead sent, in order. The view is handed two calls by the App: `load` (the
turns, read from the lane's files) and `send` (one message through the lane's control socket); it
reads no file and opens no socket itself. It reloads every second while open, and right after a
message is sent, so the agent's answer appears without a key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, Static

if TYPE_CHECKING:
    from lanes_tui.engine import Turn

#: Who said it, and the style of the name.
ROLES = {"user": ("lead", "bold $accent"), "assistant": ("agent", "bold $primary"), "tool": ("tool", "$text-muted"),
         "result": ("result", "bold $success"), "output": ("", "")}


def turn_content(turn: Turn) -> Content:
    """One turn as plain text with its speaker in front (the agent's text is never read as markup)."""
    who, style = ROLES.get(turn.role, (turn.role, ""))
    if not who:
        return Content(turn.text)
    return Content.assemble((f"{who}: ", style), turn.text)


class ConversationScreen(Screen[None]):
    """A full screen over the dashboard: the transcript above, the message line below; escape returns."""

    DEFAULT_CSS = """
    ConversationScreen {
        layout: vertical;
    }
    ConversationScreen #conversation-title {
        text-style: bold;
        color: $primary;
        padding: 0 1;
    }
    ConversationScreen #turns {
        height: 1fr;
        border: round $primary 40%;
        padding: 0 1;
    }
    ConversationScreen .turn {
        margin-bottom: 1;
    }
    ConversationScreen .turn-tool {
        color: $text-muted;
        margin-bottom: 0;
    }
    ConversationScreen #conversation-status {
        height: auto;
        padding: 0 1;
        color: $text-muted;
    }
    ConversationScreen #conversation-status.refused {
        color: $error;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back to the dashboard", id="conversation.close"),
    ]

    def __init__(self, lane_id: str, *, load: Callable[[], Awaitable[Sequence[Turn]]],
                 send: Callable[[str], Awaitable[str]] | None, every_s: float = 1.0) -> None:
        super().__init__()
        self.lane_id = lane_id
        self.load = load
        self.send = send
        self.every_s = every_s
        self.turns: list[Turn] = []

    def compose(self) -> ComposeResult:
        live = self.send is not None
        yield Label(Content(f"Conversation with lane {self.lane_id}"), id="conversation-title")
        yield VerticalScroll(id="turns")
        yield Input(placeholder="a message for the agent; enter sends it" if live
                    else "the lane is not running: read only", id="message", disabled=not live)
        yield Static(Content("enter sends · escape returns to the dashboard" if live else
                             "escape returns to the dashboard"), id="conversation-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#message", Input).focus()
        self.reload()
        self.set_interval(self.every_s, self.reload)

    @work(group="conversation-load", exclusive=True)
    async def reload(self) -> None:
        turns = list(await self.load())
        if turns == self.turns:
            return
        box = self.query_one("#turns", VerticalScroll)
        follow = box.is_vertical_scroll_end or not self.turns
        same = 0
        while same < min(len(turns), len(self.turns)) and turns[same] == self.turns[same]:
            same += 1
        stale = list(box.children)[same:]  # a turn that grew (Claude prints a message again as it grows)
        if stale:
            await box.remove_children(stale)
        await box.mount_all([Static(turn_content(t), classes=f"turn turn-{t.role}") for t in turns[same:]])
        self.turns = turns
        if follow:
            box.scroll_end(animate=False)

    @on(Input.Submitted, "#message")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if text and self.send is not None:
            event.input.clear()
            self._send(text)

    @work(group="conversation-send")
    async def _send(self, text: str) -> None:
        status = self.query_one("#conversation-status", Static)
        assert self.send is not None
        from lanes_tui.engine import LanesError  # here: importing the view loads no engine module

        try:
            said = await self.send(text)
        except LanesError as exc:  # the lane refused, or is gone: its one line
            status.update(Content(f"not sent: {exc}"))
            status.add_class("refused")
            return
        status.update(Content(said))
        status.remove_class("refused")
        self.reload()

    def action_close(self) -> None:
        self.dismiss(None)
