"""The `plain` channel: output only (questions come through `lanes-tui ask`), plus aider's cost line.

aider has no JSON output but prints, after every model reply,
`Tokens: 12k sent, 345 received. Cost: $0.05 message, $0.12 session.` (with `, N cache write` and
`, N cache hit` before `received` when a prompt cache is used). The tokens are per message, so they
add up; the session cost is aider's own running total, so it replaces the previous one.
"""

from __future__ import annotations

import contextlib
import re

from lanes_tui.engine.channels.base import Channel
from lanes_tui.engine.core.ansi import strip_ansi
from lanes_tui.engine.state.meters import RunMeter, Usage

_NUM = r"[0-9][0-9.,]*\s*[kKmM]?"
TOKENS_RE = re.compile(
    rf"Tokens:\s*(?P<sent>{_NUM})\s+sent"
    rf"(?:,\s*(?P<write>{_NUM})\s+cache write)?"
    rf"(?:,\s*(?P<hit>{_NUM})\s+cache hit)?"
    rf",\s*(?P<received>{_NUM})\s+received\."
    r"(?:\s*Cost:\s*\$(?P<message>[0-9][0-9.,]*)\s+message,\s*\$(?P<session>[0-9][0-9.,]*)\s+session\.)?"
)


def parse_count(text: str) -> int:
    """aider's `12k`, `1.2k`, `3.4M`, `345` as a whole number of tokens."""
    raw = text.replace(",", "").replace(" ", "")
    scale = 1
    if raw[-1:] in ("k", "K"):
        scale, raw = 1_000, raw[:-1]
    elif raw[-1:] in ("m", "M"):
        scale, raw = 1_000_000, raw[:-1]
    try:
        return max(0, round(float(raw) * scale))
    except ValueError:
        return 0


def feed_aider_line(meter: RunMeter, text: str) -> bool:
    """Apply one aider `Tokens: … Cost: …` line to `meter`; False if the line is something else."""
    if "Tokens:" not in text:
        return False
    match = TOKENS_RE.search(strip_ansi(text))
    if match is None:
        return False
    sent = parse_count(match["sent"])
    hit = min(sent, parse_count(match["hit"])) if match["hit"] else 0
    write = min(sent - hit, parse_count(match["write"])) if match["write"] else 0
    meter.add_turn(Usage(input=sent, cached_input=hit, cache_write=write,
                         output=parse_count(match["received"])))
    if match["session"]:
        with contextlib.suppress(ValueError):
            meter.set_cost(float(match["session"].replace(",", "")), "reported")
    return True


class PlainChannel(Channel):
    """Output only; the one thing read from it is aider's token and cost line."""

    name = "plain"

    line_marker = b"Tokens:"

    def on_line(self, line: bytes) -> None:
        if b"Tokens:" in line:
            feed_aider_line(self.ctx.meters, line.decode("utf-8", errors="replace"))
