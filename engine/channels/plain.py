"""The `plain` channel: output only (questions come through `lanes-tui ask`), plus aider's cost line.

aider has no JSON output but prints, after every model reply,
`Tokens: 12k sent, 345 received. Cost: $0.05 message, $0.12 session.` (with `, N cache write` and
`, N cache hit` before `received` when a prompt cache is used). The tokens are per message, so they
add up; the session cost is aider's own running total, so it replaces the previous one.
"""

from __future__ import annotations

import contextlib
import re

from lanes_tui.engine.channels.base import Channel, ChannelContext
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


#: aider's `Retrying in 0.2 seconds...` (base_coder.send_message): it sleeps that long, silently, and asks again.
RETRY_RE = re.compile(r"Retrying in (?P<delay>[0-9]+(?:\.[0-9]+)?) seconds")
#: The exception litellm raised, as aider prints it first on its error line (`litellm.AuthenticationError:
#: …`): the class is the structured part of aider's plain output → an API error kind (`ERROR_KINDS`).
LITELLM_ERROR_RE = re.compile(r"^\s*litellm\.(?P<cls>[A-Za-z]+Error|Timeout)\b")
LITELLM_KINDS = {"AuthenticationError": "auth", "PermissionDeniedError": "forbidden", "NotFoundError": "model",
                 "RateLimitError": "rate_limit", "ServiceUnavailableError": "overloaded",
                 "BadGatewayError": "overloaded", "InternalServerError": "server"}
#: The quota words that make a `RateLimitError` a billing error (OpenAI's 429 `insufficient_quota`).
QUOTA_RE = re.compile(r"exceeded\s+your\s+current\s+quota|insufficient[_\s]+quota|Insufficient\s+credits", re.I)
#: An error paragraph is read up to this many lines (rich wraps aider's message at 80 columns).
ERROR_LINES = 6


class PlainChannel(Channel):
    """Output only; read from it: aider's token and cost line, its API errors and its own retries.

    aider prints no JSON, but its error line starts with litellm's exception class and its retry line
    says how long it sleeps: the kind goes to `report_error` (the quota words, maybe wrapped onto the
    next line, make a rate limit a billing error) and the delay to `report_retry`, so a lane whose
    aider waits 32 s between attempts is retrying, not stalled. The text patterns of the preset
    (`provider_facts.AIDER_*`) classify the same lines when the run ends.
    """

    name = "plain"

    line_marker = None
    #: Blocks without any of these are skipped in one scan (a flood costs what it did).
    MARKERS = (b"Tokens:", b"litellm.", b"Retrying in")

    def __init__(self, ctx: ChannelContext) -> None:
        super().__init__(ctx)
        self._error: tuple[str, list[str]] | None = None  # litellm's class, and the lines of its message

    def on_block(self, block: bytes) -> None:
        if self._error is None and not any(marker in block for marker in self.MARKERS):
            return
        super().on_block(block)

    def on_line(self, line: bytes) -> None:
        if b"Tokens:" in line:
            feed_aider_line(self.ctx.meters, line.decode("utf-8", errors="replace"))
            return
        text = strip_ansi(line.decode("utf-8", errors="replace"))
        retry = RETRY_RE.search(text)
        if retry:
            self._end_error()
            self.report_retry(float(retry["delay"]), text.strip())
            return
        start = LITELLM_ERROR_RE.match(text)
        if start:
            self._end_error()
            self._error = (start["cls"], [text.strip()])
            self._report()
        elif self._error is not None:  # the message goes on, wrapped, until aider's own advice or a blank
            if not text.strip() or text.lstrip().startswith("The API provider") or len(self._error[1]) >= ERROR_LINES:
                self._end_error()
            else:
                self._error[1].append(text.strip())
                self._report()

    def _report(self) -> None:
        assert self._error is not None
        cls, lines = self._error
        detail = " ".join(lines)
        kind = LITELLM_KINDS.get(cls)
        if cls in ("RateLimitError", "APIError") and QUOTA_RE.search(detail):
            kind = "billing"
        elif kind == "server" and "overloaded" in detail.lower():
            kind = "overloaded"
        if kind is not None:
            self.report_error(kind, detail)

    def _end_error(self) -> None:
        self._error = None
