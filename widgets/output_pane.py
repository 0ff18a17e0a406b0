"""The Output pane: a bounded, following tail of the selected lane's output.

A `Log` (plain text, much cheaper than RichLog for a firehose), written a batch at a time: `Log.write`
refreshes the widget and measures the width once per line, which made showing a 2,000-line tail
cost 25-30 ms on the frame after a key-press (docs/benchmarks.md, B1). It keeps the last
`max_lines` lines (up to an eighth more between cuts), follows new output only while the view is at
the bottom (so the lead can scroll up and read while the agent keeps printing), and strips ANSI
escapes and control characters: agent output must not be able to move the cursor or recolour the
dashboard.

A structured lane (claude, codex, gemini: one JSON object a line, several KB each) is shown readable
by default: the engine's `ReadableStream` turns each line into the conversation it stands for as it
arrives (text, `→ tool: input`, `  ⎿ result`, questions, errors, usage); every other line passes as
it is. `readable = False` shows the raw lines (the `w` key; the title says which). Only what the pane
is given is rendered (the tail, then each new chunk), never the whole log.

The batched writes and the cheaper frames are the fence's `FastLog` (`lanes_tui.fast.log`): this module
uses its public methods (`write_batch`, `forget_lines`, `settle_size`, `thumb_hidden`) and Log's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.reactive import var

from lanes_tui.fast.log import FastLog
from lanes_tui.widgets._format import clean_text

if TYPE_CHECKING:
    from lanes_tui.engine import ReadableStream

MAX_LINES = 2000
#: A line longer than this is broken: an agent printing without newlines must not grow one line forever.
MAX_LINE_CHARS = 4000


class OutputPane(FastLog):
    """Shows one lane's output; `show` replaces it, `append` adds to it if it is the lane shown."""

    DEFAULT_CSS = """
    OutputPane {
        height: 1fr;
        border: round $panel;
        border-title-color: $text-muted;
        padding: 0 1;
        scrollbar-gutter: stable;
    }
    OutputPane.-tail {
        scrollbar-visibility: hidden;
    }
    OutputPane:focus {
        border: round $primary;
        border-title-color: $primary;
    }
    """

    readable: var[bool] = var(True, init=False)
    """Structured output as a conversation (True) or as its raw JSON lines; `show` applies a change."""

    def __init__(self, *, max_lines: int = MAX_LINES, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(highlight=False, max_lines=max_lines, auto_scroll=False, name=name, id=id, classes=classes)
        self.lane_id: str | None = None
        """The lane whose output is shown; `append` for any other lane is ignored."""
        self._partial = 0  # characters on the current (unterminated) last line
        self._stream: ReadableStream | None = None
        """The shown lane's output made readable as it comes (None while raw lines are shown)."""
        self.border_title = "Output"

    @property
    def following(self) -> bool:
        """True while the view is at the bottom, i.e. new output scrolls into view."""
        return self.is_vertical_scroll_end

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Hide the scrollbar while the view follows the tail; show it once the lead scrolls up.

        At the tail the thumb only ever says "at the end", and repainting it on every batch cost
        as much as the lines themselves (its gutter stays reserved, so no text moves). A hidden
        scrollbar is not touched either: a repaint of a widget off the screen makes Textual map the
        whole screen again.
        """
        tail = self.is_vertical_scroll_end
        if tail and self.has_class("-tail"):
            if round(old_value) != round(new_value):
                self.refresh(self.size.region)
            return
        self.set_class(tail, "-tail")
        super().watch_scroll_y(old_value, new_value)  # shown again, the thumb is laid out afresh

    def thumb_hidden(self) -> bool:
        """At the tail the scrollbar is hidden (`watch_scroll_y`): a batch leaves its thumb alone."""
        return self.has_class("-tail")

    def show(self, lane_id: str | None, text: str) -> None:
        """Replace the pane with `lane_id`'s output (only its last `max_lines` lines are kept)."""
        self.lane_id = lane_id
        self.forget_lines()
        self._partial = 0
        limit = self.max_lines or MAX_LINES
        tail = text[-limit * 200:] if len(text) > limit * 200 else text  # cheap cut before splitting
        self._stream = None
        if self.readable and lane_id is not None:
            from lanes_tui.engine import ReadableStream  # here: importing the widgets loads no engine module

            # The tail may begin mid-line (it is the end of the log): a torn JSON line is dropped.
            self._stream = ReadableStream(width=self._wrap_width(), cut_head=True)
            tail = self._stream.feed(tail) + "".join(f"{line}\n" for line in self._stream.readable.flush())
        self._title()
        lines = tail.split("\n")
        if len(lines) > limit + 1:
            tail = "\n".join(lines[-(limit + 1):])
        self.write_batch(self._guard(clean_text(tail)), scroll_end=True)
        self.settle_size()  # an empty tail: the old lane's range goes

    def _wrap_width(self) -> int:
        """The width the agent's text is wrapped to: the pane's, less its gutter (0: not laid out yet)."""
        width = self.scrollable_content_region.width - 1
        return width if width >= 20 else 0

    def _title(self) -> None:
        """`Output · lane`, and `· readable` once structured lines were made readable, or `· raw`."""
        if not self.lane_id:
            self.border_title = "Output"
        elif not self.readable:
            self.border_title = f"Output · {self.lane_id} · raw"
        elif self._stream is not None and self._stream.structured:
            self.border_title = f"Output · {self.lane_id} · readable"
        else:
            self.border_title = f"Output · {self.lane_id}"

    def append(self, lane_id: str, text: str) -> bool:
        """Add output of `lane_id` if it is the lane shown; returns whether it was shown."""
        if lane_id != self.lane_id or not text:
            return False
        if self._stream is not None:
            structured = self._stream.structured
            text = self._stream.feed(text)
            if self._stream.structured != structured:
                self._title()
            if not text:  # a JSON line not whole yet, or one that shows nothing (a streamed piece)
                return True
        follow = self.following
        self.write_batch(self._guard(clean_text(text)), scroll_end=follow)
        return True

    def _guard(self, text: str) -> str:
        """Break lines longer than MAX_LINE_CHARS, counting the unterminated line across calls."""
        parts = text.split("\n")
        if self._partial + len(parts[0]) <= MAX_LINE_CHARS and max(map(len, parts[1:]), default=0) <= MAX_LINE_CHARS:
            # Nothing to break (the usual case): a lane's whole 64 KiB tail in one C-speed pass.
            self._partial = self._partial + len(parts[0]) if len(parts) == 1 else len(parts[-1])
            return text
        out: list[str] = []
        for i, part in enumerate(text.split("\n")):
            if i:
                out.append("\n")
                self._partial = 0
            while self._partial + len(part) > MAX_LINE_CHARS:
                take = MAX_LINE_CHARS - self._partial
                out.append(part[:take])
                out.append("\n")
                part = part[take:]
                self._partial = 0
            out.append(part)
            self._partial += len(part)
        return "".join(out)
