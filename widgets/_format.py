"""Small formatters and the state → tone map shared by the panes.

Kept in one place so every pane shows durations, sizes and money the same way, and so the table
cells (Rich text, which cannot resolve `$warning` itself) take their colours from the running theme.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rich.style import Style
from textual.app import App
from textual.color import Color, ColorParseError

#: Which theme variable colours a lane state; absent states use the default text colour.
STATE_TONE: Mapping[str, str] = {
    "running": "",
    "launching": "",
    "queued": "",
    "checking": "",
    "reviewing": "",
    "exited": "",
    "waiting": "warning",
    "stalled": "error",
    "rejected": "error",
    "conflict": "error",
    "lost": "error",
    "unreachable": "warning",
    "ready": "success",
    "accepted": "dim",
    "abandoned": "dim",
}

#: Used only when the app has no theme variables yet (never in a running app); named, not hex.
_FALLBACK = {"warning": "yellow", "error": "red", "success": "green", "primary": "blue", "accent": "magenta"}

# Control characters other than tab and newline (carriage returns are handled before this).
_CTRL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def tone_style(app: App[Any], tone: str, *, bold: bool = False) -> Style:
    """A Rich style for `tone` ("warning", "error", "success", "dim", "") from the app's theme.

    The list panes draw their cells as Rich segments, so `$warning` cannot be written into them; the colour is
    looked up in the theme instead (and looked up again when the theme changes).
    """
    if not tone:
        return Style(bold=True) if bold else Style()
    if tone == "dim":
        return Style(dim=True, bold=bold or None)
    value = app.theme_variables.get(tone) or _FALLBACK.get(tone, "")
    try:
        color = Color.parse(value).rich_color
    except ColorParseError:
        return Style(bold=bold or None)
    return Style(color=color, bold=bold or None)


def clean_text(text: str) -> str:
    """Strip ANSI escapes and control characters so agent output cannot repaint the terminal.

    `\\r\\n` becomes `\\n`; a bare `\\r` (progress bars) keeps only what was written after it. A
    trailing `\\r` is dropped, not applied: output arrives in chunks, and a `\\r\\n` split between two
    chunks must not wipe the line.
    """
    from lanes_tui.engine import strip_ansi  # here: importing the widgets loads no engine module (a test checks)

    text = strip_ansi(text.replace("\r\n", "\n")).rstrip("\r")
    if "\r" in text:
        text = "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    text = text.replace("\t", "    ")
    return _CTRL_RE.sub("", text)


def truncate(text: str, width: int) -> str:
    """One line of at most `width` characters, an ellipsis marking a cut."""
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: max(width - 1, 0)] + "…"


def duration(seconds: float | None) -> str:
    """`45s`, `12m`, `1h05m`, `2d03h`; empty when unknown, so a blank cell means "no data"."""
    if seconds is None:
        return ""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s" if s < 600 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def elapsed(seconds: float | None) -> str:
    """`45s`, then whole minutes (`3m`, `59m`), then as `duration` (`1h05m`).

    For columns that tick on every lane (elapsed, question age): past the first minute a
    seconds digit makes the whole row repaint every tick on every lane, for a figure nobody reads
    to the second (B2 in docs/benchmarks.md). Idle keeps `duration`: its seconds are the stall clock.
    """
    if seconds is not None and 60 <= seconds < 3600:
        return f"{int(seconds) // 60}m"
    return duration(seconds)


def size(n: float | None) -> str:
    """Bytes as `512K`, `38M`, `1.2G`; empty when unknown."""
    if n is None:
        return ""
    value = float(n)
    for unit in ("B", "K", "M", "G", "T"):
        if abs(value) < 1024 or unit == "T":
            if unit in ("B", "K", "M"):
                return f"{value:.0f}{unit}"
            return f"{value:.1f}{unit}"
        value /= 1024
    return ""  # pragma: no cover - the loop always returns


def tokens(n: int | float | Mapping[str, Any] | None) -> str:
    """`950`, `12.3k`, `1.2M`; empty when the provider prints no token counts.

    The engine reports tokens as `{"total", "input", "output", …}`; the table shows the total.
    """
    if isinstance(n, Mapping):
        n = n.get("total")
    if n is None:
        return ""
    v = float(n)
    if v < 1000:
        return f"{v:.0f}"
    if v < 1_000_000:
        return f"{v / 1000:.1f}k"
    return f"{v / 1_000_000:.1f}M"


def cost(usd: float | None, estimated: bool = False) -> str:
    """`$0.42`, or `~$0.42` when the provider gave tokens but no price (an estimate)."""
    if usd is None:
        return ""
    return f"{'~' if estimated else ''}${usd:,.2f}"


def percent(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"
