"""The look shared by every dialog: a centred box over the dimmed dashboard.

A generic base so each dialog stays a `ModalScreen[T]` with its own result type; the CSS type
selector `Dialog` matches the subclasses too, so the look is written once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from textual.app import ComposeResult
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

ResultT = TypeVar("ResultT")


class Dialog(ModalScreen[ResultT]):
    """Base of the dialogs; subclasses compose inside a `#dialog` container."""

    DEFAULT_CSS = """
    Dialog {
        align: center middle;
    }
    Dialog > #dialog {
        width: 96;
        max-width: 100%;
        height: auto;
        max-height: 90%;
        border: thick $primary;
        background: $surface;
        padding: 1 2;
    }
    Dialog .title {
        text-style: bold;
        color: $primary;
        margin-bottom: 1;
    }
    Dialog .body {
        height: auto;
        max-height: 24;
    }
    Dialog .line {
        height: auto;
    }
    Dialog .refused {
        color: $error;
        text-style: bold;
    }
    Dialog .note {
        margin-top: 1;
        height: auto;
    }
    Dialog .error {
        color: $error;
        height: auto;
    }
    Dialog .hint {
        margin-top: 1;
        color: $text-muted;
    }
    """


def plain_lines(lines: Iterable[str], *, refused_marker: str = "REFUSED") -> ComposeResult:
    """One Static per line, as plain Content (engine text is not markup); refusals in `$error`."""
    for line in lines:
        classes = "line refused" if line.startswith(refused_marker) else "line"
        yield Static(Content(line), classes=classes)
