"""The codex-json channel reads Codex CLI 0.169's own lines: usage with cache writes and reasoning,
API errors from its `error` / `turn.failed` events, its "Reconnecting... n/N" retries, and a warning
that is not an error. The lines are real: recorded from codex 0.169.0 against the scripted model
server (tests/real_cli/samples/codex/, `tests.real_cli.model_server.openai_responses`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from lanes_tui.engine.channels import ChannelContext, make_channel
from lanes_tui.engine.channels.base import Channel
from lanes_tui.engine.channels.codex import provider_error, reset_time
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.state.meters import RunMeter, Usage

SAMPLES = Path(__file__).parent / "real_cli" / "samples" / "codex"


def feed(tmp_path: Path, sample: str, clock: FakeClock | None = None) -> tuple[Channel, RunMeter]:
    clock = clock or FakeClock()
    meter = RunMeter(tmp_path / "meters.json", clock, provider="codex", model=PRESETS["codex"].model)
    channel = make_channel(ChannelContext(lane="cx", attempt=1, provider=PRESETS["codex"], inbox=None,
                                          meters=meter, clock=clock))
    channel.on_block((SAMPLES / f"{sample}.jsonl").read_bytes().rstrip(b"\n"))
    return channel, meter


def test_a_run_reads_the_thread_and_every_part_of_the_usage(tmp_path: Path) -> None:
    channel, meter = feed(tmp_path, "run_file_and_command")
    assert channel.error is None and channel.retrying_until is None
    assert meter.session_id == "01a23cc8-8681-7772-9208-8908494c452a"
    # 3 requests of 1200 in (600 cached, 100 written to the cache) and 80 out (20 reasoning).
    assert meter.usage() == Usage(input=3600, cached_input=1800, cache_write=300, output=240)


def test_the_model_metadata_warning_is_no_error(tmp_path: Path) -> None:
    channel, meter = feed(tmp_path, "warning_model_metadata")
    assert channel.error is None
    assert meter.usage().total == 1280


@pytest.mark.parametrize(("sample", "kind"), [
    ("error_billing", "billing"),
    ("error_auth", "auth"),
    ("error_forbidden", "forbidden"),
    ("error_rate_limit_retried", "rate_limit"),
    ("error_overloaded", "overloaded"),
    ("error_server", "server"),
    ("error_usage_limit", "usage_limit"),
])
def test_each_api_error_is_read_from_its_event(tmp_path: Path, sample: str, kind: str) -> None:
    channel, _ = feed(tmp_path, sample)
    assert channel.error is not None
    assert channel.error.kind == kind, channel.error
    assert channel.error.detail
    assert (channel.error.reset_at is not None) == (kind == "usage_limit")


def test_reconnecting_lines_are_codex_retrying_by_itself(tmp_path: Path) -> None:
    clock = FakeClock()
    channel, _ = feed(tmp_path, "error_rate_limit_retried", clock)
    # "Reconnecting... 2/2": codex waits about 0.4 s (200 ms doubled) before its next try.
    assert channel.retrying_until is not None
    assert clock.time() < channel.retrying_until <= clock.time() + 5


def test_the_usage_limit_reset_is_the_time_codex_names() -> None:
    now = datetime(2026, 12, 3, 16, 41, 20).timestamp()  # local time, as codex prints it
    today = reset_time("… or try again at 6:41 PM.", now)
    assert today == datetime(2026, 12, 3, 18, 42).timestamp(), "minute precision: the next minute"
    later = reset_time("… or try again at Dec 6th, 2026 12:12 AM.", now)
    assert later == datetime(2026, 12, 6, 0, 13).timestamp()
    assert reset_time("You've hit your usage limit. Upgrade to Pro or try again in 3 hours.", now) == now + 3 * 3600
    assert reset_time("You’ve hit your usage limit. Try again later.", now) is None


def test_ordinary_messages_are_no_provider_error() -> None:
    assert provider_error("Model metadata for `gpt-9` not found. Defaulting to fallback metadata") is None
    assert provider_error("unexpected status 400 Bad Request: Invalid value for 'input'") is None
    assert provider_error("unexpected status 404 Not Found: The model `gpt-9` does not exist") == "model"
