"""The gemini-stream-json channel on what Gemini CLI 0.61 really printed (tests/real_cli/samples/gemini).

Each sample is one real run against the scripted model server: its stdout (`.jsonl`) and its stderr
(`.stderr`). The channel must name the API error from the structure (`report_error`) whichever pipe it
reads first, see gemini's own retries (`report_retry`), and the preset's text patterns must still give
the right result on their own (the fallback the engine uses today).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lanes_tui.engine.channels import ChannelContext, make_channel
from lanes_tui.engine.channels.gemini import GeminiChannel
from lanes_tui.engine.channels.gemini_errors import MAX_BACKOFF_S, result_error, retry_delay
from lanes_tui.engine.config.cli_facts import GEMINI_CONFIG_EXIT_CODES, GEMINI_EXIT_CODES
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.lanes.classify import PatternScanner, classify
from lanes_tui.engine.state.meters import RunMeter

SAMPLES = Path(__file__).parent / "real_cli" / "samples" / "gemini"
#: name → (exit code it had, kind the channel reports, seconds to the reset it states, result by patterns)
#: ("LANE-FAILED" here is a retry in the lane: rate limit, overload and 5xx.)
RUNS = {
    "normal": (0, None, None, "OK"),
    "retried": (0, None, None, "OK"),  # one 429, retried by gemini after ~6 s, then the turns: no error
    "trust": (55, "trust", None, "CONFIG-ERROR"),
    "auth41": (41, "auth", None, "CONFIG-ERROR"),
    "auth": (144, "auth", None, "CONFIG-ERROR"),
    "forbidden": (147, "forbidden", None, "CONFIG-ERROR"),
    "billing": (173, "billing", None, "OUT-OF-BUDGET"),
    "usage_limit": (173, "usage_limit", 120.0, "OUT-OF-BUDGET"),
    "rate_limit": (173, "rate_limit", None, "LANE-FAILED"),
    "overloaded": (247, "overloaded", None, "LANE-FAILED"),
    "server": (244, "server", None, "LANE-FAILED"),
}


def lines(name: str, suffix: str) -> list[bytes]:
    path = SAMPLES / f"{name}.{suffix}"
    return path.read_bytes().splitlines() if path.exists() else []


def channel(tmp_path: Path) -> tuple[GeminiChannel, FakeClock, RunMeter]:
    clock = FakeClock()
    meter = RunMeter(tmp_path / "meters.json", clock, provider="gemini", model="gemini-2.5-pro")
    ctx = ChannelContext(lane="g", attempt=1, provider=PRESETS["gemini"], inbox=None, meters=meter, clock=clock)
    made = make_channel(ctx)
    assert isinstance(made, GeminiChannel)
    return made, clock, meter


@pytest.mark.parametrize("stderr_first", [False, True])
@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_recorded_run_reports_its_error_kind(tmp_path: Path, name: str, stderr_first: bool) -> None:
    ch, clock, _ = channel(tmp_path)
    out, err = lines(name, "jsonl"), lines(name, "stderr")
    for line in (err + out if stderr_first else out + err):
        ch.on_line(line)
    _, kind, reset_in, _ = RUNS[name]
    if kind is None:
        assert ch.error is None
        return
    assert ch.error is not None and ch.error.kind == kind, ch.error
    assert ch.error.detail and "\n" not in ch.error.detail
    if reset_in is None:
        assert ch.error.reset_at is None
    else:
        assert ch.error.reset_at == pytest.approx(clock.time() + reset_in)


@pytest.mark.parametrize("structured", [True, False])
@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_run_gets_its_result_from_structure_and_from_text_alone(tmp_path: Path, name: str,
                                                                      structured: bool) -> None:
    """`classify` on the channel's error (as the supervisor does), and on the text patterns alone."""
    rc, kind, _, result = RUNS[name]
    preset = PRESETS["gemini"]
    scanner = PatternScanner.from_patterns(preset.budget_patterns, preset.config_patterns, preset.retry_patterns)
    ch, _, _ = channel(tmp_path)
    for line in lines(name, "jsonl") + lines(name, "stderr"):
        scanner.feed_bytes(line)
        ch.on_line(line)
    got = classify(rc, scanner, error=ch.error if structured else None, provider=preset)
    assert got.result == result, got
    assert got.retry == (kind in ("rate_limit", "overloaded", "server")), got
    assert got.error == (kind if structured else None), got


def test_a_normal_run_meters_its_tokens_and_session(tmp_path: Path) -> None:
    ch, _, meter = channel(tmp_path)
    for line in lines("normal", "jsonl"):
        ch.on_line(line)
    assert meter.session_id == "dc1fb898-5283-42e4-9634-603adc6355a1"
    meter.flush()
    tokens = json.loads((tmp_path / "meters.json").read_text())["tokens"]
    assert (tokens["input"], tokens["output"], tokens["total"]) == (3600, 240, 3840)


def test_gemini_retrying_by_itself_is_reported_with_its_delay(tmp_path: Path) -> None:
    ch, clock, _ = channel(tmp_path)
    for line in lines("retried", "stderr"):  # "Attempt 1 failed: …" / "… Retrying after 5931ms..."
        ch.on_line(line)
    assert ch.retrying_until == pytest.approx(clock.time() + 5.931) and ch.error is None
    ch2, clock2, _ = channel(tmp_path / "2")
    ch2.on_line(lines("server", "stderr")[0])  # "Attempt 1 failed with status 500. Retrying with backoff..."
    assert ch2.retrying_until == pytest.approx(clock2.time() + MAX_BACKOFF_S)
    last = "Attempt 2 failed: The model is overloaded. Please try again later.. Max attempts reached"
    assert retry_delay(last) is None  # gemini gave up: no retry to wait for


@pytest.mark.parametrize(("message", "kind"), [
    ('[API Error: {"error":{"code":401,"message":"Request had invalid authentication credentials.",'
     '"status":"UNAUTHENTICATED","details":[]}}]', "auth"),
    ('[API Error: {"error":{"code":404,"message":"models/gemini-9 is not found","status":"NOT_FOUND"}}]', "model"),
    ('[API Error: {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and '
     'billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",'
     '"reason":"BILLING_DISABLED"}]}}]', "billing"),
    ('[API Error: {"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":['
     '{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":'
     '"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo",'
     '"retryDelay":"34s"}]}}]', "usage_limit"),
    ("[API Error: Resource has been exhausted (e.g. check quota).\nSuggested retry after 1s.]", "rate_limit"),
    ("Maximum session turns exceeded", None),
])
def test_error_messages_in_other_shapes(message: str, kind: str | None) -> None:
    found = result_error(message)
    assert (found.kind if found else None) == kind


def test_the_exit_codes_that_are_config_errors_are_named() -> None:
    assert set(GEMINI_CONFIG_EXIT_CODES) <= set(GEMINI_EXIT_CODES)
    assert {RUNS["trust"][0], RUNS["auth41"][0]} <= set(GEMINI_CONFIG_EXIT_CODES)
