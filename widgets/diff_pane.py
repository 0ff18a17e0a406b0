"""The Diff pane: the selected lane's diff against its base, coloured and bounded.

The engine produces the diff text; this pane only colours it (added lines `$success`, removed
`$error`, hunk headers `$accent`, file headers bold) through Textual `Content` spans, so the colours
follow the theme. A huge diff (a lane that vendored a dependency) is cut with a note rather than
freezing the dashboard while it lays out megabytes.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content, Span
from textual.widgets import Static

from lanes_tui.widgets._format import clean_text

MAX_LINES = 3000
MAX_CHARS = 400_000
MAX_LINE_CHARS = 500


class DiffPane(VerticalScroll):
    """`show(lane_id, diff_text)` replaces what is shown; scroll with the usual keys."""

    DEFAULT_CSS = """
    DiffPane {
        height: 1fr;
        border: round $panel;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    DiffPane:focus {
        border: round $primary;
        border-title-color: $primary;
    }
    DiffPane > #diff-body {
        width: auto;
        min-width: 100%;
    }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.lane_id: str | None = None
        self.truncated = False
        """Whether the last diff shown was cut (the tests and the App may say so elsewhere)."""
        self.border_title = "Diff"

    def compose(self) -> ComposeResult:
        yield Static(Content("select a lane and press d"), id="diff-body")

    def show(self, lane_id: str | None, diff_text: str) -> None:
        """Show `diff_text` for `lane_id`, cut to MAX_LINES / MAX_CHARS with a note when larger."""
        self.lane_id = lane_id
        self.border_title = f"Diff · {lane_id}" if lane_id else "Diff"
        self.query_one("#diff-body", Static).update(self._render_diff(diff_text))
        self.scroll_home(animate=False)

    def _render_diff(self, diff_text: str) -> Content:
        text = clean_text(diff_text)
        if not text.strip():
            return Content("no changes against the base")
        lines = text[:MAX_CHARS].split("\n")
        total = text.count("\n") + 1
        self.truncated = len(text) > MAX_CHARS or len(lines) > MAX_LINES
        lines = lines[:MAX_LINES]
        if self.truncated:
            lines.pop()  # the last line kept may be cut in the middle
        out: list[str] = []
        spans: list[Span] = []
        pos = 0
        for line in lines:
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + "…"
            style = _line_style(line)
            if style:
                spans.append(Span(pos, pos + len(line), style))
            out.append(line)
            pos += len(line) + 1
        if self.truncated:
            note = (f"… diff cut after {len(lines)} of {total} lines ({len(text) // 1024} KiB); "
                    "see the whole diff with git in the lane's worktree")
            spans.append(Span(pos, pos + len(note), "$warning italic"))
            out.append(note)
        return Content("\n".join(out), spans)


def _line_style(line: str) -> str:
    if line.startswith(("+++", "---", "diff --git", "index ", "new file", "deleted file", "rename ")):
        return "bold"
    if line.startswith("+"):
        return "$success"
    if line.startswith("-"):
        return "$error"
    if line.startswith("@@"):
        return "$accent"
    return ""
