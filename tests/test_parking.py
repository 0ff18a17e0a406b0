"""Quota parking: reset times read off the providers' real quota lines, and the park's three endings.

Times are checked against a fixed `now` in a named zone (so the tests do not depend on the machine's
zone), and `park_until` runs on a fake clock: hours of parking take no real time.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.lanes.parking import (
    REACHED,
    RESUMED,
    STOPPED,
    find_reset,
    format_parked,
    park_until,
    reset_time,
)

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2025, 3, 10, 13, 0, tzinfo=BERLIN)  # a Monday, 13:00 in Berlin (UTC+1)


def at(hour: int, minute: int = 0, *, day: int = 10, month: int = 3, second: int = 0) -> datetime:
    return datetime(2025, month, day, hour, minute, second, tzinfo=BERLIN)


@pytest.mark.parametrize(("line", "expected"), [
    # Claude Code
    ("5-hour limit reached ∙ resets 3pm", at(15)),
    ("Approaching usage limit · resets at 12pm", at(12, day=11)),
    ("resets 3:30pm", at(15, 30)),
    ("Claude usage limit reached. Your limit will reset at 3pm (America/New_York).", at(20)),
    ("You've hit your session limit · resets 8:30pm (Asia/Tokyo)", at(12, 30, day=11)),
    ("Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).", at(19)),
    ("Resets Mar 14, 10:59am (America/New_York)", at(15, 59, day=14)),
    ("Claude AI usage limit reached|1741622400", at(17)),  # 2025-03-10T16:00:00Z
    # Codex
    ("You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) "
     "or try again in 2 hours 13 minutes.", at(15, 13)),
    ("You've hit your usage limit. Try again in 1h 5m.", at(14, 5)),
    ("You've hit your usage limit. Try again in 2 days 3 hours 4 minutes.", at(16, 4, day=12)),
    ("You've hit your usage limit. Try again at 3:04 PM.", at(15, 4)),
    ("You've hit your usage limit. Try again at Mar 12th, 2025 9:30 AM.", at(9, 30, day=12)),
    ("You've hit your usage limit, try again in less than a minute.", at(13, 1)),
    # Gemini
    ("Quota exceeded for quota metric 'Gemini 2.5 Pro Requests'. Please retry in 41s.", at(13, 0, second=41)),
    ("TerminalQuotaError: You have exhausted your capacity on this model. "
     "Your quota will reset after 1h49m8s.", at(14, 49, second=8)),
    ('{"error": {"code": 429, "details": [{"retryDelay": "34s"}]}}', at(13, 0, second=34)),
    ("quotaResetTimeStamp: '2025-03-10T19:14:08Z'", at(20, 14, second=8)),
    ("Individual quota reached, retry after 17:00", at(17)),
])
def test_reset_time_reads_the_providers_formats(line: str, expected: datetime) -> None:
    assert reset_time(line, NOW) == expected


def test_fractional_and_millisecond_delays() -> None:
    assert reset_time("Please retry in 41.5s.", NOW) == NOW + timedelta(seconds=41.5)
    assert reset_time("Please retry in 250ms.", NOW) == NOW + timedelta(milliseconds=250)


def test_durations_in_words() -> None:
    assert reset_time("try again in an hour and 5 minutes", NOW) == at(14, 5)
    assert reset_time("try again in 2 hours, 13 minutes and 4 seconds", NOW) == at(15, 13, second=4)
    assert reset_time("please retry in and out of hours", NOW) is None  # "an d" is not a day


@pytest.mark.parametrize("line", [
    "You've hit your usage limit. Try again later.",
    "retry after 5 attempts",
    "Claude usage limit reached.",
    "resets 25:00",
    "resets 13pm",
    "try again in 400 days",  # not a quota window: a misread is worse than no time
    "",
])
def test_no_stated_time_is_none(line: str) -> None:
    assert reset_time(line, NOW) is None


def test_a_clock_time_already_past_means_tomorrow() -> None:
    late = datetime(2025, 3, 10, 23, 50, tzinfo=BERLIN)
    assert reset_time("resets 3am", late) == at(3, day=11)
    assert reset_time("retry after 23:55", late) == datetime(2025, 3, 10, 23, 55, tzinfo=BERLIN)
    # across the end of a month and the wall clock, not a fixed 24 h, over a DST change (Mar 30 in Berlin)
    eve = datetime(2025, 3, 29, 22, 0, tzinfo=BERLIN)
    assert reset_time("resets 9am", eve) == datetime(2025, 3, 30, 9, 0, tzinfo=BERLIN)


def test_a_date_without_a_year_past_the_new_year() -> None:
    eve = datetime(2025, 12, 30, 10, 0, tzinfo=BERLIN)
    assert reset_time("Resets Jan 2, 9am", eve) == datetime(2026, 1, 2, 9, 0, tzinfo=BERLIN)


def test_an_unknown_zone_falls_back_to_now_s_zone() -> None:
    assert reset_time("resets 3pm (Nowhere/Atlantis)", NOW) == at(15)


def test_naive_now_is_local_time_and_gets_a_naive_answer() -> None:
    now = datetime(2025, 3, 10, 13, 0)
    assert reset_time("resets 3pm", now) == datetime(2025, 3, 10, 15, 0)
    assert reset_time("try again in 1h 5m", now) == datetime(2025, 3, 10, 14, 5)
    zoned = reset_time("resets 3pm (UTC)", now)
    assert zoned is not None and zoned.tzinfo is None
    now_utc = now.astimezone(UTC)  # whatever this machine's zone is
    expected = now_utc.replace(hour=15, minute=0)
    if expected < now_utc:
        expected += timedelta(days=1)
    assert zoned == expected.astimezone().replace(tzinfo=None)


def test_find_reset_takes_the_newest_statement() -> None:
    lines = ["working", "Please retry in 10s.", "still out", "Your quota will reset after 2h.", "bye"]
    assert find_reset(lines, NOW) == at(15)
    assert find_reset(["nothing here"], NOW) is None


def test_format_parked() -> None:
    assert format_parked(at(15, 4)) == "parked until 15:04"
    assert format_parked(at(15, 4), NOW) == "parked until 15:04"
    assert format_parked(at(9, 30, day=11), NOW) == "parked until Mar 11 09:30"
    # shown in the lead's zone, whatever zone the provider named
    assert format_parked(datetime(2025, 3, 10, 14, 0, tzinfo=UTC), NOW) == "parked until 15:00"


# --- park_until -----------------------------------------------------------------------------------


async def _when(clock: FakeClock, t: float) -> None:
    """Yield to the loop until the fake clock passes `t` (the parked task moves it)."""
    while clock.time() < t:
        await asyncio.sleep(0)


async def test_park_until_the_reset_time(tmp_path: Path) -> None:
    clock = FakeClock()
    until = clock.time() + 2 * 3600
    result = await park_until(until, stop=asyncio.Event(), resume_now=tmp_path / "resume-now", clock=clock,
                              poll_s=60)
    assert result == REACHED
    assert until <= clock.time() < until + 60


async def test_park_until_stopped_by_the_lead(tmp_path: Path) -> None:
    clock = FakeClock()
    start = clock.time()
    stop = asyncio.Event()

    async def lead() -> None:
        await _when(clock, start + 600)
        stop.set()

    task = asyncio.create_task(lead())
    result = await park_until(start + 3600, stop=stop, resume_now=tmp_path / "resume-now", clock=clock,
                              poll_s=30)
    await task
    assert result == STOPPED
    assert start + 600 <= clock.time() < start + 3600


async def test_park_until_resumed_early_by_the_file(tmp_path: Path) -> None:
    clock = FakeClock()
    start = clock.time()
    resume = tmp_path / "resume-now"

    async def lead() -> None:
        await _when(clock, start + 900)
        resume.write_text("")

    task = asyncio.create_task(lead())
    result = await park_until(start + 3600, stop=asyncio.Event(), resume_now=resume, clock=clock, poll_s=30)
    await task
    assert result == RESUMED
    assert not resume.exists()  # taken, so it resumes once
    assert start + 900 <= clock.time() < start + 3600


async def test_park_until_a_time_already_past_returns_at_once(tmp_path: Path) -> None:
    clock = FakeClock()
    before = clock.time()
    assert await park_until(before - 5, stop=asyncio.Event(), resume_now=tmp_path / "r", clock=clock) == REACHED
    assert clock.time() == before


async def test_a_stop_cuts_a_real_sleep_short(tmp_path: Path) -> None:
    """With a real clock, the stop event ends the wait without waiting out `poll_s`."""
    from lanes_tui.engine.core.clock import RealClock

    clock = RealClock()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.call_soon(stop.set)
    started = loop.time()
    result = await park_until(clock.time() + 3600, stop=stop, resume_now=tmp_path / "r", clock=clock, poll_s=30)
    assert result == STOPPED
    assert loop.time() - started < 5
