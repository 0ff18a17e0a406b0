"""The context meter without processes: recorded CLI lines in, `meters.json`'s `context` out; the window
table, the precedence of config over report over table, the tolerant reader, and the config keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.channels import ChannelContext, make_channel
from lanes_tui.engine.channels.codex import codex_context
from lanes_tui.engine.config.providers import PRESETS, ProviderConfig
from lanes_tui.engine.config.settings import parse_config
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.state.context import DEFAULT_WINDOW, ContextMeter, parse_context, window_for
from lanes_tui.engine.state.meters import RunMeter, Usage
from lanes_tui.engine.state.status import LaneStatus

SAMPLES = Path(__file__).parent / "real_cli" / "samples"


def _run(tmp_path: Path, provider: ProviderConfig, lines: list[bytes], **meter: Any) -> RunMeter:
    """Feed recorded stdout lines to the provider's channel; the meter it wrote to."""
    clock = FakeClock()
    run = RunMeter(tmp_path / "meters.json", clock, provider=provider.name, model=provider.model, **meter)
    channel = make_channel(ChannelContext(lane="ctx-a1", attempt=1, provider=provider, inbox=None, meters=run,
                                          clock=clock))
    for line in lines:
        channel.on_line(line)
    return run


def _written(tmp_path: Path) -> dict[str, Any]:
    return dict(json.loads((tmp_path / "meters.json").read_text()))


# --- the recorded real formats ----------------------------------------------------------------------

def test_claude_recorded_run_context_is_the_latest_prompt_against_the_reported_window(tmp_path: Path) -> None:
    """Claude Code 2.1.328's own lines: each request read 1200 tokens (the result's 3600 is their sum);
    the window is the family's until the result line names the model's (`contextWindow`: 1000000)."""
    lines = (SAMPLES / "claude" / "run_write_bash_allowed.jsonl").read_bytes().splitlines()
    result = next(i for i, line in enumerate(lines) if b'"type":"result"' in line.replace(b" ", b""))
    live = _run(tmp_path, PRESETS["claude"], lines[:result])
    assert live.context() == ContextMeter(1200, 200_000, 0.85, "table")  # model claude-sonnet-5-5: the claude row
    final = _run(tmp_path, PRESETS["claude"], lines)
    final.flush()
    assert _written(tmp_path)["context"] == {"used": 1200, "window": 1_000_000, "fraction": 0.0012, "warn": 0.85,
                                            "source": "reported", "near": False}
    assert _written(tmp_path)["tokens"]["input"] == 3600  # the lane's total: three requests


def test_codex_recorded_turn_total_is_not_a_context(tmp_path: Path) -> None:
    """codex 0.169's `turn.completed` usage is the thread's total over its requests: tokens, no meter."""
    lines = (SAMPLES / "codex" / "run_file_and_command.jsonl").read_bytes().splitlines()
    run = _run(tmp_path, PRESETS["codex"], lines)
    run.flush()
    assert run.usage().input == 3600 and run.context() is None
    assert _written(tmp_path)["context"] is None


def test_gemini_recorded_result_stats_are_not_a_context(tmp_path: Path) -> None:
    lines = (SAMPLES / "gemini" / "normal.jsonl").read_bytes().splitlines()
    run = _run(tmp_path, PRESETS["gemini"], lines)
    assert run.usage().input == 3600 and run.context() is None


def test_aider_and_sim_lines_give_no_context(tmp_path: Path) -> None:
    line = b"Tokens: 12k sent, 345 received. Cost: $0.05 message, $0.12 session."
    for name in ("aider", "sim"):
        run = _run(tmp_path / name, PRESETS[name], [line])
        assert run.usage().input == 12_000 and run.context() is None


def test_claude_sub_agent_messages_are_not_the_lane_context(tmp_path: Path) -> None:
    def assistant(msg_id: str, inp: int, read: int, parent: str | None) -> bytes:
        usage = {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": 10,
                 "output_tokens": 5}
        return json.dumps({"type": "assistant", "parent_tool_use_id": parent,
                           "message": {"id": msg_id, "content": [], "usage": usage}}).encode()

    lines = [assistant("m1", 100, 5000, None), assistant("m2", 9000, 90_000, "toolu_1")]
    run = _run(tmp_path, PRESETS["claude"], lines)
    assert run.context() == ContextMeter(5110, 200_000, 0.85, "table")
    assert run.usage().input == 5110 + 99_010  # the sub-agent's tokens still count in the lane's total


def test_codex_token_count_in_each_envelope() -> None:
    info = {"total_token_usage": {"input_tokens": 90_000}, "model_context_window": 272_000,
            "last_token_usage": {"input_tokens": 41_000, "cached_input_tokens": 40_000, "output_tokens": 300}}
    event = {"type": "token_count", "info": info, "rate_limits": None}
    assert codex_context(event) == (41_000, 272_000)
    assert codex_context({"id": "3", "msg": event}) == (41_000, 272_000)
    assert codex_context({"timestamp": "t", "type": "event_msg", "payload": event}) == (41_000, 272_000)
    assert codex_context({"type": "token_count", "info": None}) is None  # before the first request
    assert codex_context({"type": "turn.completed", "usage": {"input_tokens": 5}}) is None


# --- the window and the meter ----------------------------------------------------------------------

@pytest.mark.parametrize(("model", "window"), [
    ("sonnet", 200_000), ("claude-sonnet-4-5-20250929", 200_000), ("sonnet[1m]", 1_000_000),
    ("openrouter/anthropic/claude-opus-4", 200_000), ("gpt-5.5", 272_000), ("gpt-4.1-mini", 1_047_576),
    ("o4-mini", 200_000), ("gemini-2.5-pro", 1_048_576),
])
def test_window_by_model_family(model: str, window: int) -> None:
    assert window_for(model) == (window, "table")


def test_unknown_model_gets_the_default_window() -> None:
    assert window_for("glm-4.6") == (DEFAULT_WINDOW, "default") == window_for("")


def test_window_precedence_config_then_reported_then_table(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "meters.json"
    first = RunMeter(path, clock, provider="claude", model="claude-x")
    first.set_context(50_000)
    assert first.context() == ContextMeter(50_000, 200_000, 0.85, "table")
    first.set_context_window(400_000)
    assert first.context() == ContextMeter(50_000, 400_000, 0.85, "reported")
    first.flush()
    # The next run of the same model starts with no meter (a new agent process) but knows the window.
    second = RunMeter(path, clock, provider="claude", model="claude-x", context_warn=0.5)
    assert second.context() is None and second.window() == (400_000, "reported")
    second.set_context(300_000)
    meter = second.context()
    assert meter == ContextMeter(300_000, 400_000, 0.5, "reported")
    assert meter is not None and meter.near
    configured = RunMeter(path, clock, provider="claude", model="claude-x", context_window=1_000)
    configured.set_context(1_500)
    configured.set_context_window(400_000)
    meter = configured.context()
    assert meter == ContextMeter(1_500, 1_000, 0.85, "config")
    assert meter is not None and meter.fraction == 1.5


def test_a_reviewer_run_keeps_the_agent_meter(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "meters.json"
    agent = RunMeter(path, clock, provider="claude", model="sonnet")
    agent.set_context(120_000)
    agent.flush()
    reviewer = RunMeter(path, clock, provider="codex", model="gpt-5.5", measures_context=False)
    reviewer.add_turn(Usage(input=10, output=1))
    reviewer.set_context(999)
    reviewer.flush()
    assert _written(tmp_path)["context"]["used"] == 120_000


@pytest.mark.parametrize("data", [
    None, [], "63%", {"used": "lots", "window": 200_000}, {"used": 5, "window": 0}, {"used": -1, "window": 9},
    {"used": True, "window": 200_000}, {"used": 5, "window": 2**60}, {"window": 200_000},
])
def test_a_context_that_is_no_context_reads_as_none(data: object) -> None:
    assert parse_context(data) is None


def test_a_bad_threshold_or_source_reads_as_the_default() -> None:
    meter = parse_context({"used": 170_000, "window": 200_000, "warn": float("nan"), "source": "<script>"})
    assert meter == ContextMeter(170_000, 200_000, 0.85, "default")
    assert meter is not None and meter.near


def test_status_json_round_trips_the_meter() -> None:
    status = LaneStatus.from_json({"id": "a1", "context": {"used": 126_000, "window": 200_000, "warn": 0.85,
                                                           "source": "reported"}})
    assert status.context == ContextMeter(126_000, 200_000, 0.85, "reported")
    assert status.to_json()["context"] == {"used": 126_000, "window": 200_000, "fraction": 0.63, "warn": 0.85,
                                           "source": "reported", "near": False}
    assert LaneStatus.from_json(status.to_json()) == status
    assert LaneStatus.from_json({"id": "b1"}).context is None


# --- config ----------------------------------------------------------------------------------------

def _config(tmp_path: Path, text: str) -> Any:
    return parse_config(text, path=None, repo=tmp_path)


def test_config_keys_for_every_lane_and_per_provider(tmp_path: Path) -> None:
    config = _config(tmp_path, "[lanes]\ncontext_warn = 0.9\n\n[providers.claude]\ncontext_window = 1000000\n"
                               "context_warn = 0.7\n")
    assert config.lanes.context_warn == 0.9
    assert (config.providers["claude"].context_window, config.providers["claude"].context_warn) == (1_000_000, 0.7)
    assert (config.providers["codex"].context_window, config.providers["codex"].context_warn) == (0, 0.0)
    assert _config(tmp_path, "").lanes.context_warn == 0.85


@pytest.mark.parametrize(("text", "named"), [
    ("[lanes]\ncontext_warn = 85\n", "lanes.context_warn"),
    ("[lanes]\ncontext_warn = \"85%\"\n", "lanes.context_warn"),
    ("[lanes]\ncontext_warn = 0\n", "lanes.context_warn"),
    ("[providers.codex]\ncontext_warn = true\n", "providers.codex.context_warn"),
    ("[providers.codex]\ncontext_window = \"200k\"\n", "providers.codex.context_window"),
    ("[providers.codex]\ncontext_window = 0\n", "providers.codex.context_window"),
    ("[providers.codex]\ncontext_window = 2000000000\n", "providers.codex.context_window"),
])
def test_a_bad_context_key_is_one_clear_error(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(LanesError) as caught:
        _config(tmp_path, text)
    assert named in str(caught.value) and caught.value.fix
