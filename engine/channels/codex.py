"""The `codex-json` channel: `codex exec --json` events (PROVIDERS.md).

`thread.started` carries the thread id, which is also what `codex exec resume` takes, so it is the
lane's session id. Each `turn.completed` reports that turn's `usage`, OpenAI's way: `cached_input_tokens`
and `cache_write_input_tokens` are parts of `input_tokens`, `reasoning_output_tokens` part of
`output_tokens`; turns add up. Codex prints no cost, so the meters estimate one from their price table
and label it as estimated. `codex exec` has no answer channel: it decides up front.

Context meter (`state.context`): `turn.completed`'s usage is the thread's total over every model
request (codex-rs `usage_from_last_total`; the recorded sample's 3600 input tokens are three requests
of 1200), so it says nothing about how full the window is and is never shown as such. Codex's own
`token_count` event does say it — `info.last_token_usage.input_tokens` of the latest request against
`info.model_context_window` — and is read wherever it appears: bare, in the `{"id", "msg"}` envelope of
codex's protocol stream, or as a rollout file's `event_msg` payload.

Errors (Codex CLI 0.169): an API error is an `{"type":"error","message":…}` line, and the turn ends
with `{"type":"turn.failed","error":{"message":…}}`; the message is codex's rendering of the HTTP
status and body (it carries no status field of its own), so `provider_error` reads the kind from the
forms codex words it in. `{"type":"error","message":"Reconnecting... 2/5 (…)"}` is codex retrying by
itself (`report_retry`). An `item.completed` whose item is of type `error` is a warning codex runs on
after ("Model metadata for `x` not found. Defaulting to fallback metadata"): never an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from lanes_tui.engine.channels.base import Channel, json_line, number
from lanes_tui.engine.state.meters import Usage

#: `Reconnecting... 2/5 (exceeded retry limit, last status: 429 Too Many Requests)`.
RETRY = re.compile(r"^Reconnecting\.*\s*(\d+)/(\d+)")
#: codex's back-off before stream retry n: 200 ms doubled per attempt, ±10 % jitter (codex-rs `backoff`).
BACKOFF_BASE_S = 0.2
#: The message forms, first match wins: (kind, regex). Statuses as codex prints them: `unexpected
#: status 401 Unauthorized: <body's message>, url: …`, `exceeded retry limit, last status: 429 …`.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(source, re.IGNORECASE)) for kind, source in (
    ("usage_limit", r"You['’]ve hit your usage limit"),
    ("billing", r"Quota exceeded\. Check your plan|insufficient_quota|out of credits"),
    ("auth", r"status:? 401\b"),
    ("forbidden", r"status:? 403\b"),
    ("model", r"status:? 404\b|model is not supported when using Codex|model_not_found"),
    ("rate_limit", r"status:? 429\b|rate limit"),
    ("overloaded", r"status:? (503|529)\b|overloaded|Server is busy"),
    ("server", r"status:? 5\d\d\b|experiencing high demand|stream disconnected|Internal server error"),
))
#: `… or try again at 5:08 PM.` (today, codex's local time) or `… at Dec 6th, 2026 12:12 AM.`;
#: older codex said `try again in 3 hours`.
RESET_AT = re.compile(r"try again at (?:(?P<mon>[A-Z][a-z]{2}) (?P<day>\d{1,2})(?:st|nd|rd|th)?, (?P<year>\d{4}) )?"
                      r"(?P<h>\d{1,2}):(?P<m>\d{2})\s*(?P<ampm>[AP]M)", re.IGNORECASE)
RESET_IN = re.compile(r"try again in (\d+)\s*(second|minute|hour|day)s?", re.IGNORECASE)
UNIT_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def codex_usage(usage: object) -> Usage:
    if not isinstance(usage, Mapping):
        return Usage()
    total = number(usage.get("input_tokens"))
    cached = min(total, number(usage.get("cached_input_tokens")))
    written = min(total - cached, number(usage.get("cache_write_input_tokens")))
    # Reasoning is part of output_tokens in OpenAI's usage (and codex's): counted there, once.
    output = max(number(usage.get("output_tokens")), number(usage.get("reasoning_output_tokens")))
    return Usage(input=total, cached_input=cached, cache_write=written, output=output)


def codex_context(msg: Mapping[str, object]) -> tuple[int, int] | None:
    """(prompt tokens of the latest request, the model's window or 0) from a `token_count` event in
    any of its envelopes, or None for any other line (or a count before the first request: info null)."""
    for event in (msg, msg.get("msg"), msg.get("payload")):
        if isinstance(event, Mapping) and event.get("type") == "token_count":
            info = event.get("info")
            last = info.get("last_token_usage") if isinstance(info, Mapping) else None
            if not isinstance(info, Mapping) or not isinstance(last, Mapping):
                return None
            return number(last.get("input_tokens")), number(info.get("model_context_window"))
    return None


def provider_error(message: str) -> str | None:
    """The ERROR_KINDS kind of one codex error message, or None for one it does not say."""
    for kind, pattern in KINDS:
        if pattern.search(message):
            return kind
    return None


def reset_time(message: str, now: float) -> float | None:
    """When a usage limit resets, from codex's words (local time, minute precision: rounded up)."""
    found = RESET_AT.search(message)
    if found is not None:
        hour = int(found["h"]) % 12 + (12 if found["ampm"].upper() == "PM" else 0)
        today = datetime.fromtimestamp(now)
        try:
            if found["mon"]:
                month = datetime.strptime(found["mon"].title(), "%b").month
                when = datetime(int(found["year"]), month, int(found["day"]), hour, int(found["m"]))
            else:
                when = today.replace(hour=hour, minute=int(found["m"]), second=0, microsecond=0)
        except ValueError:
            return None
        return max(now, (when + timedelta(minutes=1)).timestamp())
    later = RESET_IN.search(message)
    if later is not None:
        return now + int(later[1]) * UNIT_S[later[2].lower()]
    return None


class CodexChannel(Channel):
    name = "codex-json"

    def on_line(self, line: bytes) -> None:
        msg = json_line(line)
        if msg is None:
            return
        kind = msg.get("type")
        if kind == "thread.started":
            self.session(msg.get("thread_id"))
        elif kind == "turn.completed":
            self.ctx.meters.add_turn(codex_usage(msg.get("usage")))
        elif kind == "error":
            self._error(msg.get("message"))
        elif kind == "turn.failed":
            error = msg.get("error")
            self._error(error.get("message") if isinstance(error, Mapping) else None)
        elif (context := codex_context(msg)) is not None:
            self.ctx.meters.set_context(context[0])
            self.ctx.meters.set_context_window(context[1])

    def _error(self, message: object) -> None:
        if not isinstance(message, str) or not message:
            return
        retry = RETRY.match(message)
        if retry is not None:
            attempt = max(1, int(retry[1]))
            self.report_retry(max(1.0, BACKOFF_BASE_S * 2 ** (attempt - 1) * 1.1), message)
            return
        kind = provider_error(message)
        if kind is not None:
            now = self.ctx.clock.time()
            self.report_error(kind, message, reset_time(message, now) if kind == "usage_limit" else None)
