"""The claude-stream-json channel reads API errors from Claude's structured fields.

Every input is a line Claude Code 2.1.328 really printed against the scripted model server
(tests/real_cli/samples/claude/, recorded by the real-CLI tier): the channel must report each error
mode as its kind (`Channel.error`), Claude's own retries as `retrying_until`, and nothing for a
normal run, whatever the text of the lines says.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.channels import ChannelContext, make_channel
from lanes_tui.engine.channels.base import ProviderError
from lanes_tui.engine.channels.claude import ClaudeStreamChannel
from lanes_tui.engine.channels.claude_errors import assistant_error, result_error, retry_delay
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.state.meters import RunMeter

SAMPLES = Path(__file__).parent / "real_cli" / "samples" / "claude"


class _IO:
    def __init__(self) -> None:
        self.closed = False

    def write(self, data: bytes) -> bool:
        return not self.closed

    def close_input(self) -> None:
        self.closed = True

    def refresh(self) -> None:
        return None


def _channel(tmp_path: Path, lane_dir: Path | None = None) -> tuple[ClaudeStreamChannel, FakeClock]:
    clock = FakeClock()
    provider = PRESETS["claude"]
    meter = RunMeter(tmp_path / "meters.json", clock, provider=provider.name, model=provider.model)
    ctx = ChannelContext(lane="unit-a1", attempt=1, provider=provider, inbox=InboxStore(tmp_path / "inbox", clock),
                         meters=meter, clock=clock, lane_dir=lane_dir)
    channel = make_channel(ctx)
    assert isinstance(channel, ClaudeStreamChannel)
    channel.attach(_IO())
    return channel, clock


def _lines(name: str) -> list[bytes]:
    return (SAMPLES / name).read_bytes().splitlines()


def _feed(channel: ClaudeStreamChannel, name: str) -> None:
    for line in _lines(name):
        channel.on_line(line)


@pytest.mark.parametrize(("sample", "kind", "detail"), [
    ("error_billing.jsonl", "billing", "Credit balance is too low"),
    ("error_auth.jsonl", "auth", "Invalid API key · Fix external API key"),
    ("error_forbidden.jsonl", "forbidden", "Failed to authenticate. API Error: 403 Your API key does not have "
                                           "permission to use the specified resource."),
    ("error_rate_limit.jsonl", "rate_limit", "API Error: Request rejected (429) · This request would exceed the "
                                             "rate limit for your organization of 50 requests per minute."),
    # Claude says `server_error` for a 529 whose retries ran out; the status says overloaded.
    ("error_overloaded.jsonl", "overloaded", "API Error: 529 Overloaded."),
    ("error_server.jsonl", "server", "API Error: 500 Internal server error."),
    # With an API key Claude ignores the plan's headers: a 429 is a rate limit, whatever its body says.
    ("error_usage_limit_api_key.jsonl", "rate_limit", "API Error: Request rejected (429) · Usage limit reached"),
])
def test_each_error_mode_is_reported_by_kind(tmp_path: Path, sample: str, kind: str, detail: str) -> None:
    channel, _ = _channel(tmp_path)
    _feed(channel, sample)
    assert channel.error is not None
    assert channel.error.kind == kind
    assert channel.error.detail.startswith(detail)
    assert channel.error.reset_at is None
    assert channel.result_seen and channel.io.closed  # type: ignore[attr-defined]


def test_a_plans_usage_limit_carries_its_reset_time(tmp_path: Path) -> None:
    channel, _ = _channel(tmp_path)
    lines = _lines("error_usage_limit_gateway.jsonl")
    said = json.loads(lines[2])
    reset = said["api_error_params"]["rate_limit_info"]["resetsAt"]
    _feed(channel, "error_usage_limit_gateway.jsonl")
    assert channel.error == ProviderError("usage_limit", said["message"]["content"][0]["text"], float(reset))
    assert channel.error.detail.startswith("You've hit your 5-hour limit · resets ")


def test_a_normal_run_reports_no_error_and_no_retry(tmp_path: Path) -> None:
    for sample in ("run_write_bash_allowed.jsonl", "run_write_bash_denied.jsonl"):
        channel, _ = _channel(tmp_path / sample)
        _feed(channel, sample)
        assert (channel.error, channel.retrying_until) == (None, None)
        assert channel.result_seen


@pytest.mark.parametrize("sample", ["error_rate_limit.jsonl", "error_overloaded.jsonl", "error_server.jsonl",
                                    "error_auth.jsonl"])
def test_claudes_own_retries_say_how_long_it_waits(tmp_path: Path, sample: str) -> None:
    channel, clock = _channel(tmp_path)
    retry_line = next(line for line in _lines(sample) if b'"api_retry"' in line)
    delay_ms = json.loads(retry_line)["retry_delay_ms"]
    channel.on_line(retry_line)
    assert channel.retrying_until == pytest.approx(clock.time() + delay_ms / 1000)
    assert channel.error is None  # retrying is not (yet) failing


def test_the_result_line_alone_is_enough(tmp_path: Path) -> None:
    """A stream that lost the assistant line (a torn pipe, a CLI that stops printing it): the result's
    `api_error_status` and `api_error_type` still say what happened."""
    for sample, kind in (("error_forbidden.jsonl", "forbidden"), ("error_overloaded.jsonl", "overloaded"),
                         ("error_rate_limit.jsonl", "rate_limit"), ("error_auth.jsonl", "auth")):
        channel, _ = _channel(tmp_path / sample)
        channel.on_line(_lines(sample)[-1])
        assert channel.error is not None and channel.error.kind == kind, sample


def test_a_successful_result_clears_an_error_retried_away(tmp_path: Path) -> None:
    channel, _ = _channel(tmp_path)
    channel.on_line(_lines("error_rate_limit.jsonl")[2])
    assert channel.error is not None
    channel.on_line(_lines("run_write_bash_allowed.jsonl")[-1])
    assert channel.error is None


@pytest.mark.parametrize("msg", [
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "Credit balance is too low"}]}},
    {"type": "assistant", "error": "max_output_tokens", "is_api_error_message": True, "message": {}},
    {"type": "assistant", "error": 7, "message": {}},
    {"type": "result", "is_error": True, "subtype": "error_max_turns"},
    {"type": "result", "is_error": "yes", "api_error_status": 401},
    {"type": "system", "subtype": "api_retry", "retry_delay_ms": -5},
    {"type": "system", "subtype": "api_retry", "retry_delay_ms": True},
    {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed", "resetsAt": 1796316571}},
])
def test_text_and_odd_fields_are_not_errors(tmp_path: Path, msg: dict[str, Any]) -> None:
    channel, _ = _channel(tmp_path)
    channel.on_line(json.dumps(msg).encode())
    assert (channel.error, channel.retrying_until, channel.limit_reset_at) == (None, None, None)


def test_field_refinements() -> None:
    base = {"type": "assistant", "is_api_error_message": True, "message": {"content": "x"}}
    assert assistant_error({**base, "error": "model_not_found", "api_error_status": 404}).kind == "model"  # type: ignore[union-attr]
    assert assistant_error({**base, "error": "unknown", "api_error_status": 402}).kind == "billing"  # type: ignore[union-attr]
    assert assistant_error({**base, "error": "rate_limit", "api_error": "usage_limit_reached"},
                           last_reset=1800000000.0) == assistant_error(
        {**base, "error": "rate_limit", "api_error_params": {"rate_limit_info": {"status": "rejected",
                                                                                "resetsAt": 1800000000}}})
    assert result_error({"is_error": True, "api_error_status": 503}).kind == "server"  # type: ignore[union-attr]
    assert retry_delay({"retry_delay_ms": 1500, "error_status": 429, "error": "rate_limit", "attempt": 1,
                        "max_retries": 2}) == (1.5, "429 rate_limit (attempt 1 of 2)")


def test_the_lanes_events_say_what_claude_reported_once(tmp_path: Path) -> None:
    lane_dir = tmp_path / "lane"
    lane_dir.mkdir()
    channel, _ = _channel(tmp_path, lane_dir)
    _feed(channel, "error_overloaded.jsonl")  # one api_retry, then the error on the assistant and result lines
    said = [json.loads(line) for line in (lane_dir / "events.jsonl").read_text().splitlines()]
    assert [e["type"] for e in said] == ["api-retry", "api-error"]
    assert said[0]["detail"] == "529 overloaded (attempt 1 of 1)" and said[0]["provider"] == "claude"
    assert (said[1]["kind"], said[1]["reset_at"]) == ("overloaded", None)
    assert said[1]["detail"].startswith("API Error: 529 Overloaded.")
