"""The one ANSI-stripping expression and the one terminal-safety helper, shared by the channels, the
lead's `peek`, the review prompt, the dashboard's panes and every command-line output.

Two copies had drifted apart (the widgets' also knew the 8-bit CSI and an OSC cut off by a chunk
boundary; the channels' did not), so a line could match a meter parser in one place and print an
escape in another. This module sits in `core` (standard library only) so the engine imports it
directly and the widgets through the door (`lanes_tui.engine.strip_ansi`).

`terminal_text` is what the command line puts between agent-written text and the lead's terminal
(issue 28): a file name an agent chose, a gate's output, a record's reason. Stripping the known
sequences is not enough on its own (an escape cut in two by a write, or one the expression does not
know, would still reach the terminal), so every control character left after the strip is replaced:
no ESC, no other C0 or C1 control, no DEL, no bidirectional override, only `\\n` and `\\t` kept.
"""

from __future__ import annotations

import re

__all__ = ["ANSI_RE", "UNSAFE_RE", "strip_ansi", "terminal_text"]

#: CSI (ESC [ … final), OSC (ESC ] … BEL or ST, or cut off), two-byte escapes, and 8-bit CSI.
ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
#: What a terminal may act on rather than show: C0 controls but `\t` and `\n`, DEL, the C1 controls,
#: and the invisible marks that reorder or hide text (bidirectional overrides and isolates, zero-width
#: characters, the line and paragraph separators, the byte-order mark).
UNSAFE_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def strip_ansi(text: str) -> str:
    """`text` without colour, cursor and title sequences, so terminal output reads like pipe output."""
    return ANSI_RE.sub("", text)


def terminal_text(text: str) -> str:
    """`text` made safe to print on the lead's terminal: known escape sequences removed, a `\\r\\n`
    line end kept as `\\n`, and every other control character shown as `?` (so a hostile name is
    visibly odd rather than silently different). `\\n` and `\\t` pass; nothing else can move the
    cursor, clear the screen, set the clipboard (OSC 52) or change the title."""
    if text.isprintable():  # the common case: one C-level scan, no regex
        return text
    return UNSAFE_RE.sub("?", ANSI_RE.sub("", text).replace("\r\n", "\n"))
