"""What Gemini CLI says went wrong with the API, read from what it prints (Gemini CLI 0.61).

Gemini ends a failed run with one `result` line, `{"status": "error", "error": {"type", "message"}}`,
whose `type` is `unknown` for every API error: the structure is in the message, in one of two shapes:

* `[API Error: {"error": {"code", "message", "status", "details": [...]}}]`: the API's own body (400,
  401, 403, 404, 5xx), with Google's `ErrorInfo.reason`, `QuotaFailure` and `RetryInfo` details;
* `[API Error: <text>]`: gemini classified a 429 / 503 itself (`TerminalQuotaError`: "You have exhausted
  your daily quota on this model." — a daily quota, or a project without billing; `RetryableQuotaError`:
  "… Suggested retry after 1s.", "The model is overloaded …") and dropped the body.

Its stderr adds what the result leaves out: the error's class (`TerminalQuotaError: …`), the API's own
message under `cause:` (a daily quota says `Please retry in 3600.0s.` there), and one line per retry it
makes by itself (`Attempt 1 failed: … Retrying after 5531ms...`, `Attempt 1 failed with status 503.
Retrying with backoff...`). Headless set-up failures are one stderr line before any JSON (exit 55, 41).

Everything here is pure: the channel (`channels.gemini`) feeds it lines and reports what it returns.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from lanes_tui.engine.core.ansi import strip_ansi

#: Gemini's own back-off ceiling (`DEFAULT_RETRY_OPTIONS.maxDelayMs`): a retry that does not say its
#: delay waits at most this long.
MAX_BACKOFF_S = 30.0

#: `ErrorInfo.reason`s of a 429 that no wait cures: the project has no billing, or no credits left.
BILLING_REASONS = ("BILLING_DISABLED", "INSUFFICIENT_G1_CREDITS_BALANCE")
TRUST_RE = re.compile(r"not running in a trusted directory", re.IGNORECASE)
AUTH_RES = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"Invalid auth method selected",
    r"Please set an Auth method in your",
    r"must specify the GEMINI_API_KEY environment variable",
    r"When using Vertex AI, you must specify",
))
RETRY_AFTER_RE = re.compile(r"Retrying after (?P<ms>\d+(?:\.\d+)?)ms")
RETRY_BACKOFF_RE = re.compile(r"Attempt \d+ failed.*Retrying with backoff")
#: `Please retry in 41.2s.` (the API's message) or `Suggested retry after 3600s.` (gemini's).
RESET_RE = re.compile(r"(?:Please retry in|Suggested retry after)\s+(?P<n>\d+(?:\.\d+)?)(?P<u>ms|s)\b")
API_ERROR_RE = re.compile(r"\[API Error: (?P<body>.*?)\]?(?:\n|$)", re.DOTALL)


@dataclass(frozen=True)
class Found:
    """One error read: its kind (`channels.base.ERROR_KINDS`), its words, the reset it states (seconds)."""

    kind: str
    detail: str
    reset_in_s: float | None = None


def setup_error(line: str) -> Found | None:
    """A headless set-up failure on stderr (untrusted folder, no usable auth), or None."""
    text = strip_ansi(line).strip()
    if TRUST_RE.search(text):
        return Found("trust", text)
    if any(rx.search(text) for rx in AUTH_RES):
        return Found("auth", text)
    return None


def retry_delay(line: str) -> float | None:
    """Seconds until gemini's own next attempt, if `line` announces one (None: it does not)."""
    match = RETRY_AFTER_RE.search(line)
    if match:
        return float(match["ms"]) / 1000
    if RETRY_BACKOFF_RE.search(line):
        return MAX_BACKOFF_S
    return None


def stated_reset(text: str) -> float | None:
    """The reset a quota message states, in seconds from now, or None."""
    match = RESET_RE.search(text)
    if not match:
        return None
    value = float(match["n"])
    return value / 1000 if match["u"] == "ms" else value


def result_error(message: str) -> Found | None:
    """The kind of the API error in a `result` / `error` line's message, or None if it is not an API error."""
    text = " ".join(message.split())
    match = API_ERROR_RE.search(message)
    inner = match["body"].strip() if match else message.strip()
    body = _json_body(inner)
    if body is not None:
        return google_error(body)
    return _gemini_words(inner or text, text)


def google_error(error: dict[str, Any]) -> Found | None:
    """The kind of a Google API error body (`{"code", "message", "status", "details"}`)."""
    raw_code = error.get("code")
    code = raw_code if isinstance(raw_code, int) else 0
    status = str(error.get("status") or "")
    message = str(error.get("message") or "")
    details = [d for d in error.get("details") or [] if isinstance(d, dict)]
    reasons = {str(d.get("reason")) for d in details if str(d.get("@type", "")).endswith("ErrorInfo")}
    detail = f"{code} {status}: {message}".strip()
    if "API_KEY_INVALID" in reasons or status == "UNAUTHENTICATED" or code == 401:
        return Found("auth", detail)
    if status == "PERMISSION_DENIED" or code == 403:
        return Found("forbidden", detail)
    if status == "NOT_FOUND" or code == 404:
        return Found("model", detail)
    if code == 429 or status == "RESOURCE_EXHAUSTED":
        return _quota(details, message, detail)
    if code == 503 or status == "UNAVAILABLE":
        return Found("overloaded", detail)
    if code >= 500 or status in ("INTERNAL", "DEADLINE_EXCEEDED"):
        return Found("server", detail)
    return None


def _quota(details: list[dict[str, Any]], message: str, detail: str) -> Found:
    reset = stated_reset(message)
    for item in details:
        kind = str(item.get("@type", ""))
        if kind.endswith("RetryInfo") and isinstance(item.get("retryDelay"), str):
            reset = stated_reset(f"Please retry in {item['retryDelay']}") or reset
        if kind.endswith("ErrorInfo") and str(item.get("reason")) in BILLING_REASONS:
            return Found("billing", detail)
    daily = any("PerDay" in str(v.get("quotaId", "")) or "Daily" in str(v.get("quotaId", ""))
                for item in details if str(item.get("@type", "")).endswith("QuotaFailure")
                for v in item.get("violations") or [] if isinstance(v, dict))
    if daily:
        return Found("usage_limit" if reset is not None else "billing", detail, reset)
    return Found("rate_limit", detail, reset)


def _gemini_words(inner: str, text: str) -> Found | None:
    """A 429 / 503 gemini classified itself: its own wording is all the result line keeps."""
    lowered = inner.lower()
    if "exhausted your daily quota" in lowered:
        return Found("billing", text)  # "usage_limit" when stderr states a reset (`QuotaReading`)
    if "overloaded" in lowered or "unavailable" in lowered:
        return Found("overloaded", text)
    if "resource has been exhausted" in lowered or "suggested retry after" in lowered or "rate limit" in lowered:
        return Found("rate_limit", text, stated_reset(text))
    if "quota" in lowered:
        return Found("billing", text)
    return None


def _json_body(text: str) -> dict[str, Any] | None:
    start = text.find("{")
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        return dict(value["error"])
    return None


class QuotaReading:
    """Gemini's stderr around a quota error: a `TerminalQuotaError` line, then the API's own message
    under `cause:` (several lines), which is the only place a daily quota's reset time is printed."""

    def __init__(self) -> None:
        self.terminal = False
        self.reset_in_s: float | None = None

    def feed(self, line: str) -> bool:
        """Read one stderr line; True when it changed what is known."""
        if "TerminalQuotaError" in line:
            self.terminal = True
            return True
        if self.terminal and self.reset_in_s is None:
            reset = stated_reset(line)
            if reset is not None:
                self.reset_in_s = reset
                return True
        return False

    def refine(self, found: Found) -> Found:
        """A daily quota the result called `billing` is a usage limit when stderr stated its reset."""
        if found.kind == "billing" and self.reset_in_s is not None:
            return Found("usage_limit", found.detail, self.reset_in_s)
        return found
