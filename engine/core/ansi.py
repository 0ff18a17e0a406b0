"""The one ANSI-stripping expression, shared by the channels, the lead's `peek`, the review prompt
and the dashboard's panes.

Two copies had drifted apart (the widgets' also knew the 8-bit CSI and an OSC cut off by a chunk
boundary; the channels' did not), so a line could match a meter parser in one place and print an
escape in another. This module sits in `core` (standard library only) so the engine imports it
directly and the widgets through the door (`lanes_tui.engine.strip_ansi`).
"""

from __future__ import annotations

import re

__all__ = ["ANSI_RE", "strip_ansi"]

#: CSI (ESC [ … final), OSC (ESC ] … BEL or ST, or cut off), two-byte escapes, and 8-bit CSI.
ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")


def strip_ansi(text: str) -> str:
    """`text` without colour, cursor and title sequences, so terminal output reads like pipe output."""
    return ANSI_RE.sub("", text)
