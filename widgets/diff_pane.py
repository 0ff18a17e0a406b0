"""The Diff pane: the selected lane's diff against its base, coloured and bounded.

The engine produces the diff text; this pane only colours it (added lines `$success`, removed
`$error`, hunk headers `$accent`, file headers bold) through Textual `Content` spans, so the colours
follow the theme. A huge diff (a lane that vendored a dependency) is cut with a note rather than
freezing the dashboard while it lays out megabytes.

Hunk comments: `move_hunk` marks the next or previous hunk of what is shown (its header drawn
reversed, scrolled into view, and named in the border); the screen's `C` comments on `marked_hunk`.
The border also says how many comments the lane keeps for its next attempt (`set_kept`): a lane that
ended keeps them until it is relaunched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content, Span
from textual.widgets import Static

from lanes_tui.widgets._format import clean_text

if TYPE_CHECKING:  # the pane is given text; the engine's hunk finder is imported when a diff is shown
    from lanes_tui.engine import Hunk

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
        self.hunks: list[Hunk] = []
        """The hunks of the diff shown (only those inside what was not cut)."""
        self.hunk_index: int | None = None
        """The marked hunk (an index into `hunks`), None before the lead moves to one."""
        self.kept = 0
        """Comments the lane keeps for its next attempt."""
        self._text = ""
        self._spans: list[Span] = []
        self._offsets: list[int] = []

    @property
    def marked_hunk(self) -> Hunk | None:
        return self.hunks[self.hunk_index] if self.hunk_index is not None else None

    def compose(self) -> ComposeResult:
        yield Static(Content("select a lane and press d"), id="diff-body")

    def show(self, lane_id: str | None, diff_text: str, *, kept: int = 0) -> None:
        """Show `diff_text` for `lane_id`, cut to MAX_LINES / MAX_CHARS with a note when larger; `kept`:
        the comments the lane keeps for its next attempt. A hunk marked on the same lane stays marked
        when it is still there (the diff is shown again after each comment)."""
        before = self.marked_hunk if lane_id == self.lane_id else None
        self.lane_id = lane_id
        self.border_title = f"Diff · {lane_id}" if lane_id else "Diff"
        body = self._render_diff(diff_text)
        self.hunk_index = next((i for i, h in enumerate(self.hunks) if before is not None
                                and (h.file, h.header) == (before.file, before.header)), None)
        self.kept = kept
        self.query_one("#diff-body", Static).update(body if not self._text else self._content())
        self._subtitle()
        if self.hunk_index is None:
            self.scroll_home(animate=False)

    def move_hunk(self, step: int) -> Hunk | None:
        """Mark the next (`step` 1) or previous (-1) hunk, scrolled into view; None when there is none."""
        if not self.hunks:
            return None
        if self.hunk_index is None:
            self.hunk_index = 0 if step > 0 else len(self.hunks) - 1
        else:
            self.hunk_index = max(0, min(len(self.hunks) - 1, self.hunk_index + step))
        hunk = self.hunks[self.hunk_index]
        self.query_one("#diff-body", Static).update(self._content())
        self._subtitle()
        self.scroll_to(y=max(0, hunk.start - 1), animate=False)
        return hunk

    def set_kept(self, kept: int) -> None:
        self.kept = kept
        self._subtitle()

    def _subtitle(self) -> None:
        parts = []
        hunk = self.marked_hunk
        if hunk is not None:
            parts.append(f"hunk {self.hunk_index + 1 if self.hunk_index is not None else 0}/{len(self.hunks)} "
                         f"{hunk.file}")
        elif self.hunks:
            parts.append(f"{len(self.hunks)} hunk{'' if len(self.hunks) == 1 else 's'}: ] [ move, C comments")
        if self.kept:
            parts.append(f"{self.kept} comment{'' if self.kept == 1 else 's'} kept for the next attempt")
        self.border_subtitle = " · ".join(parts)

    def _content(self) -> Content:
        """The diff with the marked hunk's header drawn reversed."""
        spans = list(self._spans)
        hunk = self.marked_hunk
        if hunk is not None and hunk.start < len(self._offsets):
            start = self._offsets[hunk.start]
            spans.append(Span(start, start + len(hunk.header), "reverse bold"))
        return Content(self._text, spans)

    def _render_diff(self, diff_text: str) -> Content:
        from lanes_tui.engine import diff_hunks  # here: importing the widgets loads no engine module

        text = clean_text(diff_text)
        self.hunks, self._text, self._spans, self._offsets = [], "", [], []
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
            self._offsets.append(pos)
            out.append(line)
            pos += len(line) + 1
        self.hunks = diff_hunks("\n".join(out))
        if self.truncated:
            note = (f"… diff cut after {len(lines)} of {total} lines ({len(text) // 1024} KiB); "
                    "see the whole diff with git in the lane's worktree")
            spans.append(Span(pos, pos + len(note), "$warning italic"))
            out.append(note)
        self._text, self._spans = "\n".join(out), spans
        return Content(self._text, spans)


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
