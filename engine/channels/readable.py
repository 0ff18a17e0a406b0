"""A structured lane's output made readable: what the Output pane and `lanes-tui peek` show.

A claude, codex or gemini lane writes one JSON object a line to `output.log`, several KB each for
claude (every tool result is in it, twice). The log stays raw (the channels, the meters and
`peek --raw` read it); this module turns those lines into a conversation the lead can follow:
the agent's text as it is, each tool call as its name and a short form of its input, each tool
result folded to one line, questions, errors, retries, and the usage and cost at the end.

Three dialects share the log (a chain may fall back from claude to codex to gemini in one lane),
so each line is read on its own by its `type` (`readable_dialects`); lines that are not JSON (a
CLI's stderr warning, the supervisor's `=== lanes-tui: … ===` banner, a plain lane's output) pass
through unchanged. The input is untrusted: nothing here raises on an odd line, no JSON line is ever
shown raw (an unknown one is one compact line), and every string taken out of the JSON is made
terminal-safe (`core.ansi.terminal_text`), since JSON can carry an escape as `\\u001b`.

`Readable` reads whole lines; `ReadableStream` frames chunks as they arrive (the dashboard's
stream ends mid-line) and hands back text with the same open-last-line shape as the raw output.
Pure, standard library only (no textual, rich): the pane, `peek` and tests all use it.
"""

from __future__ import annotations

from collections.abc import Iterable

from lanes_tui.engine.channels.base import json_line
from lanes_tui.engine.channels.readable_dialects import render
from lanes_tui.engine.channels.readable_parts import (
    MAX_HELD_CHARS,
    MAX_TEXT_LINES,
    SHORT,
    ReaderState,
    block_text,
    clean,
    fold,
    short,
    tool_call,
    tool_subject,
    unknown,
)

__all__ = [
    "MAX_HELD_CHARS", "MAX_TEXT_LINES", "SHORT", "Readable", "ReadableStream", "block_text", "clean", "fold",
    "readable_lines", "short", "tool_call", "tool_subject", "unknown",
]

class Readable(ReaderState):
    """Reads output lines one at a time and gives back the readable lines each one makes (the
    dialects keep their memory across lines in the `ReaderState` it is)."""

    def feed(self, line: str) -> list[str]:
        """The readable lines for one output line (without its newline); never raises."""
        msg = json_line(line) if line[:1] == "{" else None  # the CLIs print each object from column 0
        if msg is None or (not isinstance(msg.get("type"), str) and len(line) <= SHORT * 2):
            return [*self.flush(), line.rstrip("\r")]  # not a dialect's line (a short one): as it is
        try:
            out = render(self, msg)
        except Exception:  # untrusted input: an odd line is one compact line, never a crash
            out = None
        if out is None:
            return [*self.flush(), unknown(msg)]
        self.structured = True
        return out


class ReadableStream:
    """Output chunks in, readable text out, with the raw stream's shape: the last line may stay open.

    A JSON line is held until its newline (it is rendered whole); any other partial line is shown at
    once and continued by the next chunk, as the raw pane shows it (a progress line, a prompt).
    `cut_head` drops a first line that is the end of a JSON line (a tail read from the middle of the
    log), which would otherwise show raw.
    """

    def __init__(self, *, width: int = 0, cut_head: bool = False) -> None:
        self.readable = Readable(width=width)
        self._held = ""
        self._open = False  # a raw partial line was written and is not finished yet
        self._skipping = False  # an over-long JSON line: the rest of it is dropped
        self._cut_head = cut_head

    @property
    def structured(self) -> bool:
        return self.readable.structured

    def feed(self, chunk: str) -> str:
        """The text to add for this chunk (ends with a newline unless a raw line is left open)."""
        if self._cut_head and "\n" in chunk:  # the first line alone, the rest on the fast path if it can
            self._cut_head = False
            head, _, rest = chunk.partition("\n")
            return ("" if _looks_cut(head) else self.feed(head + "\n")) + self.feed(rest)
        if not (self._held or self._skipping or self._cut_head or self.readable.pending) and not (
                "\n{" in chunk or (chunk[:1] == "{" and not self._open)):
            # No JSON line starts in it (a plain lane, a CLI's warnings): as it is, at C speed.
            if chunk:
                self._open = not chunk.endswith("\n")
            return chunk
        out: list[str] = []
        parts = chunk.split("\n")
        for i, part in enumerate(parts):
            ended = i < len(parts) - 1
            if self._cut_head:
                if not ended and not part:
                    continue
                self._cut_head = False
                if _looks_cut(part):
                    if not ended:
                        self._skipping = True
                    continue
            if self._skipping:
                self._skipping = not ended
                continue
            if self._open:
                out.append(part + ("\n" if ended else ""))
                self._open = not ended
                continue
            line = self._held + part
            if ended:
                self._held = ""
                out.extend(rendered + "\n" for rendered in self.readable.feed(line))
            elif not line:
                continue
            elif line[:1] == "{":
                self._held = line
                if len(line) > MAX_HELD_CHARS:
                    out.append(f"· a JSON line longer than {MAX_HELD_CHARS >> 20} MiB (peek --raw shows it)\n")
                    self._held, self._skipping = "", True
            else:
                out.extend(rendered + "\n" for rendered in self.readable.flush())
                out.append(line)
                self._open = True
        return "".join(out)

    def flush(self) -> str:
        """The end of the input: a held line and held streamed text, rendered now."""
        held, self._held = self._held, ""
        lines = self.readable.feed(held) if held else []
        return "".join(line + "\n" for line in [*lines, *self.readable.flush()])


def _looks_cut(line: str) -> bool:
    """The tail end of a JSON line (a read that began mid-line): it does not open as JSON but closes as
    it (`ed"}`, `…:0}}`). Only a tail's first line is asked, and a tail cuts that line anyway."""
    text = line.strip()  # a quote, or too short to hold one: `…","exit_code":0}}` or `}}`; not `f(x) { … }`
    return bool(text) and text[0] != "{" and text.endswith("}") and ('"' in text or len(text) <= 3)


def readable_lines(lines: Iterable[str], *, width: int = 0) -> list[str]:
    """Whole output lines (no newlines) in, the readable lines out: `peek` and the tests."""
    reader = Readable(width=width)
    out: list[str] = []
    for line in lines:
        out.extend(reader.feed(line))
    out.extend(reader.flush())
    return out

