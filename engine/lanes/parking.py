"""Quota parking: a lane whose provider ran out of quota waits for the reset instead of failing.

When a provider's budget pattern fires and the chain has no provider left, the work in the lane's
worktree is still good; the provider usually says when its quota comes back. `reset_time` reads
that statement off the quota line, `park_until` waits for it (or for the lead: a stop, or the
`resume-now` file that `lanes-tui` writes to resume early), and `format_parked` is the wording the
lane's state shows. Time comes from an injected clock, so tests park for hours in no time.

Formats seen from the providers (PROVIDERS.md; the times are the CLI's local time unless a zone
follows in parentheses):

* Claude Code: `5-hour limit reached ∙ resets 3pm`, `You've hit your session limit · resets 8:30pm
  (Asia/Tokyo)`, `Claude usage limit reached. Your limit will reset at 3pm (America/New_York).`,
  weekly `Resets Jan 12, 10:59am (America/New_York)`, and the older `Claude AI usage limit
  reached|1749924000` (a Unix time).
* Codex: `You've hit your usage limit. … try again in 2 hours 13 minutes.` (older), `… Try again at
  3:04 PM.` (same day) or `… Try again at Oct 2nd, 2025 3:04 PM.`.
* Gemini: `Your quota will reset after 1h49m8s.`, `Please retry in 41.2s.`, `"retryDelay": "34s"`,
  `quotaResetTimeStamp: "2025-10-20T19:14:08Z"`, `retry after 17:00`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path

from lanes_tui.engine.core.clock import Clock

__all__ = [
    "REACHED", "RESUMED", "RESUME_NOW", "STOPPED", "find_reset", "format_parked", "park_until", "reset_time",
]

#: What `park_until` returns.
REACHED = "reset time reached"
STOPPED = "stopped"
RESUMED = "resumed by the lead"
#: The file (in the lane's state folder) whose appearance resumes a parked lane early.
RESUME_NOW = "resume-now"
#: How a parked lane's state reason starts (`format_parked`); `recover` looks for it.
PARKED_PREFIX = "parked until"
#: What the reason of a lane backing off before a retry in the lane says (`supervisor.retry`: "rate limited
#: by gemini: retrying in 30s (retry 1 of 3; …)"); it waits through `park_until` too, so `recover` wakes it.
BACKOFF_MARK = ": retrying in "
#: A stated reset further away than this is not believed (a misread, not a quota window).
MAX_AHEAD = timedelta(days=32)
#: Only the start of a very long line is read (a JSON error blob can be large; the regexes stay fast).
MAX_LINE = 4096

_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}  # by first letter, after "ms"
_UNIT = r"(?:ms|milliseconds?|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)(?![a-z])"
_PART = rf"(?:\d+(?:\.\d+)?\s*|an?\s+){_UNIT}"
_DURATION = rf"{_PART}(?:(?:\s*,\s*|\s+and\s+|\s*){_PART})*"
_LEAD_IN = r"(?:try\s+again|retry|resets?|available(?:\s+again)?)"
RELATIVE_RE = re.compile(rf"{_LEAD_IN}\s+(?:in|after)\s+(?P<d>{_DURATION}|less\s+than\s+a\s+minute)",
                         re.IGNORECASE)
PART_RE = re.compile(rf"(?:(?P<n>\d+(?:\.\d+)?)\s*|\ban?\s+)(?P<u>{_UNIT})", re.IGNORECASE)
RETRY_DELAY_RE = re.compile(r'retryDelay"?\s*[:=]\s*"?(?P<s>\d+(?:\.\d+)?)s', re.IGNORECASE)
EPOCH_RE = re.compile(r"limit reached\|(?P<ts>\d{9,11})\b", re.IGNORECASE)
ISO_RE = re.compile(
    r"(?:reset\w*|retry|try\s+again)[^0-9\n]{0,40}?"
    r"(?P<iso>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)",
    re.IGNORECASE)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
CLOCK_RE = re.compile(
    r"(?:resets?|reset\s+at|try\s+again\s+at|retry\s+(?:after|at)|available(?:\s+again)?\s+at|until)\s+"
    r"(?:at\s+)?"
    r"(?:(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?"
    r"(?:\s+(?P<year>\d{4}),?)?\s+(?:at\s+)?)?"
    r"(?P<h>\d{1,2})(?::(?P<min>\d{2}))?\s*(?P<ampm>[ap]\.?\s?m\b\.?)?"
    r"(?:\s*\((?P<zone>[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*)\)|\s+(?P<utc>UTC|GMT)\b)?",
    re.IGNORECASE)


def reset_time(line: str, now: datetime) -> datetime | None:
    """When the quota stated on `line` comes back, or None when the line states no time.

    `now` may be aware or naive (naive = this machine's local time); the result has the same kind.
    A bare clock time is in `now`'s zone unless the line names a zone in parentheses (an unknown
    name falls back to `now`'s zone); one that is already past today means tomorrow.
    """
    line = line[:MAX_LINE]
    when = _epoch(line, now) or _iso(line, now) or _relative(line, now) or _clock(line, now)
    if when is None or when - now > MAX_AHEAD:
        return None
    return when


def find_reset(lines: Iterable[str], now: datetime) -> datetime | None:
    """The reset stated last among `lines` (an output tail: the newest statement wins)."""
    found: datetime | None = None
    for line in lines:
        found = reset_time(line, now) or found
    return found


def _epoch(line: str, now: datetime) -> datetime | None:
    match = EPOCH_RE.search(line)
    if match is None:
        return None
    return _like(datetime.fromtimestamp(int(match["ts"]), UTC), now)


def _iso(line: str, now: datetime) -> datetime | None:
    match = ISO_RE.search(line)
    if match is None:
        return None
    try:
        stamp = datetime.fromisoformat(match["iso"].replace(" ", "T"))
    except ValueError:
        return None
    if stamp.tzinfo is None:  # no offset: the CLI's local time, i.e. `now`'s
        return stamp.replace(tzinfo=now.tzinfo)
    return _like(stamp, now)


def _relative(line: str, now: datetime) -> datetime | None:
    match = RETRY_DELAY_RE.search(line)
    if match is not None:
        return now + timedelta(seconds=float(match["s"]))
    match = RELATIVE_RE.search(line)
    if match is None:
        return None
    text = match["d"]
    if text.lower().startswith("less"):
        return now + timedelta(minutes=1)
    seconds = 0.0
    for part in PART_RE.finditer(text):
        count = float(part["n"]) if part["n"] else 1.0  # "an hour"
        unit = part["u"].lower()
        seconds += count * (0.001 if unit == "ms" or unit.startswith("milli") else _UNIT_SECONDS[unit[0]])
    return now + timedelta(seconds=seconds) if seconds > 0 else None


def _clock(line: str, now: datetime) -> datetime | None:
    for match in CLOCK_RE.finditer(line):
        when = _clock_match(match, now)
        if when is not None:
            return when
    return None


def _clock_match(match: re.Match[str], now: datetime) -> datetime | None:
    hour, minute, ampm = int(match["h"]), int(match["min"] or 0), (match["ampm"] or "").lower()
    if not ampm and match["min"] is None:
        return None  # "retry after 5 attempts" is not a time: a clock needs a colon or am/pm
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm.startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    zone = _zone(match["zone"], match["utc"])
    local = now if zone is None else _as(now, zone)
    try:
        when = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if match["mon"]:
            year = int(match["year"]) if match["year"] else local.year
            when = when.replace(year=year, month=_MONTHS.index(match["mon"].lower()[:3]) + 1, day=int(match["day"]))
            if not match["year"] and when < local - timedelta(days=1):
                when = when.replace(year=year + 1)  # "Jan 2" said on Dec 30
    except ValueError:
        return None
    if not match["mon"] and when < local:
        when = _next_day(when)
    return when if zone is None else _like(when, now)


def _zone(name: str | None, utc: str | None) -> tzinfo | None:
    if utc:
        return UTC
    if not name:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # a named zone is rare: 0.5 MB a supervisor otherwise

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _next_day(when: datetime) -> datetime:
    """The same wall-clock time a day later (across a DST change too, for a ZoneInfo zone)."""
    return when + timedelta(days=1)


def _as(now: datetime, zone: tzinfo) -> datetime:
    """`now` seen in `zone` (a naive `now` is local time)."""
    return (now if now.tzinfo is not None else now.astimezone()).astimezone(zone)


def _like(when: datetime, now: datetime) -> datetime:
    """`when` in `now`'s zone, naive if `now` is (local time)."""
    if now.tzinfo is None:
        return when.astimezone().replace(tzinfo=None)
    return when.astimezone(now.tzinfo)


def format_parked(until: datetime, now: datetime | None = None) -> str:
    """The lane's state reason while parked: `parked until 15:04`, with the date when `now` is given
    and the reset is on another day (`parked until Oct 02 15:04`)."""
    if now is None:
        return f"{PARKED_PREFIX} {until.strftime('%H:%M')}"
    shown = _like(until, now)
    return f"{PARKED_PREFIX} {shown.strftime('%H:%M' if shown.date() == now.date() else '%b %d %H:%M')}"


async def park_until(until_ts: float, *, stop: asyncio.Event, resume_now: Path, clock: Clock,
                     poll_s: float = 1.0) -> str:
    """Wait until `clock.time()` reaches `until_ts` (REACHED), `stop` is set (STOPPED) or the file
    `resume_now` appears (RESUMED; the file is removed so it resumes only once). The clock's own
    `sleep` paces the wait, so a fake clock parks for hours in no real time; `stop` cuts a sleep short."""
    stopper = asyncio.ensure_future(stop.wait())
    try:
        while True:
            if stop.is_set():
                return STOPPED
            if resume_now.exists():
                with contextlib.suppress(FileNotFoundError):
                    resume_now.unlink()
                return RESUMED
            remaining = until_ts - clock.time()
            if remaining <= 0:
                return REACHED
            sleeper = asyncio.ensure_future(clock.sleep(min(poll_s, remaining)))
            await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if not sleeper.done():
                sleeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sleeper
    finally:
        stopper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stopper
