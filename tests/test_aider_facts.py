"""aider's preset read against what aider 0.86.2 really printed (tests/real_cli/samples/aider/): the
error lines each pattern classifies, what the plain channel reports, and where its model comes from.

The samples are aider's stdout as a lane sees it (not a terminal: rich wraps at 80 columns, so an error
message can continue on the next line).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lanes_tui.engine.channels.base import ChannelContext
from lanes_tui.engine.channels.plain import PlainChannel
from lanes_tui.engine.config.aider_model import aider_model, model_in_argv, resolved
from lanes_tui.engine.config.cli_facts import worktree_state
from lanes_tui.engine.config.families import provider_family
from lanes_tui.engine.config.provider_facts import AIDER_RETRY
from lanes_tui.engine.config.providers import PRESETS, compile_pattern
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.lanes.classify import PatternScanner, classify
from lanes_tui.engine.state.meters import RunMeter

SAMPLES = Path(__file__).parent / "real_cli" / "samples" / "aider"
AIDER = PRESETS["aider"]


def sample(name: str) -> str:
    return (SAMPLES / f"{name}.txt").read_text()


def result_of(text: str, returncode: int = 0) -> str:
    """What the lane's result would be for this output (aider exits 0 after every API error)."""
    scanner = PatternScanner.from_patterns(AIDER.budget_patterns, AIDER.config_patterns)
    scanner.feed_bytes(text.encode())
    return classify(returncode, scanner).result


@pytest.mark.parametrize(("name", "result"), [
    ("auth_401", "CONFIG-ERROR"),
    ("forbidden_403", "CONFIG-ERROR"),
    ("quota_429_insufficient_quota", "OUT-OF-BUDGET"),
    ("rate_limit_429_then_ok", "OK"),  # "check your quotas" is aider's advice on every 429, not a quota error
    ("overloaded_503_then_ok", "OK"),
])
def test_each_sample_lands_in_its_result(name: str, result: str) -> None:
    assert result_of(sample(name)) == result


def test_the_retry_patterns_find_aiders_retry_lines_and_nothing_in_a_clean_run() -> None:
    retry = [compile_pattern(p) for p in AIDER_RETRY]
    assert any(p.search(sample("rate_limit_429_then_ok")) for p in retry)
    assert any(p.search(sample("overloaded_503_then_ok")) for p in retry)
    clean = sample("rate_limit_429_then_ok").split("Retrying in 0.2 seconds...")[1]
    assert not any(p.search(clean) for p in retry)


def channel(tmp_path: Path) -> tuple[PlainChannel, FakeClock]:
    clock = FakeClock()
    meter = RunMeter(tmp_path / "meters.json", clock, provider="aider", model="gpt-4o")
    ctx = ChannelContext(lane="l", attempt=1, provider=AIDER, inbox=None, meters=meter, clock=clock)
    return PlainChannel(ctx), clock


@pytest.mark.parametrize(("name", "kind"), [
    ("auth_401", "auth"),
    ("quota_429_insufficient_quota", "billing"),  # the quota words are on the wrapped second line
    ("rate_limit_429_then_ok", "rate_limit"),
    ("overloaded_503_then_ok", "overloaded"),
])
def test_the_plain_channel_reports_aiders_api_error(tmp_path: Path, name: str, kind: str) -> None:
    chan, _ = channel(tmp_path)
    for block in sample(name).encode().split(b"\n\n"):
        chan.on_block(block)
    assert chan.error is not None and chan.error.kind == kind, chan.error


def test_the_plain_channel_reads_aiders_retry_delay_and_its_tokens(tmp_path: Path) -> None:
    chan, clock = channel(tmp_path)
    chan.on_block(sample("quota_429_insufficient_quota").split("Retrying in 1.0")[0].encode())
    assert chan.retrying_until == pytest.approx(clock.time() + 0.5)  # the last line said 0.5 s
    chan.on_block(b"Retrying in 32.0 seconds...")
    assert chan.retrying_until == pytest.approx(clock.time() + 32.0)
    chan.on_block(sample("rate_limit_429_then_ok").encode())
    usage = chan.ctx.meters.usage()
    assert (usage.input, usage.output) == (2600, 38)


def test_the_preset_keeps_the_repository_and_the_diff_clean() -> None:
    argv = AIDER.render_argv("task", Path("/w"))
    assert argv == ["aider", "--yes-always", "--no-auto-commits", "--no-gitignore", "--message", "task"]
    assert worktree_state(AIDER) == (".aider*",)
    for name in ("AIDER_OPENAI_API_BASE", "OPENAI_API_BASE", "OPENAI_BASE_URL", "AIDER_MODEL", "AIDER_TIMEOUT"):
        assert any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in AIDER.env), name


def test_aiders_model_comes_from_where_aider_reads_it(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = {"HOME": str(home), "OPENAI_API_KEY": "k"}
    assert aider_model(["aider"], env, work) == "gpt-4o"  # the default for the key it finds
    (home / ".aider.conf.yml").write_text("# mine\nmodel: 'deepseek/deepseek-chat'  # cheap\n")
    assert aider_model(["aider"], env, work) == "deepseek/deepseek-chat"
    (work / ".aider.conf.yml").write_text("model: gemini/gemini-2.5-pro\n")
    assert aider_model(["aider"], env, work) == "gemini/gemini-2.5-pro"  # the worktree's before home's
    assert aider_model(["aider"], {**env, "AIDER_MODEL": "o3"}, work) == "o3"  # the environment first
    (home / ".env").write_text("AIDER_MODEL=gpt-4.1\n")
    assert aider_model(["aider"], {**env, "AIDER_MODEL": "o3"}, work) == "gpt-4.1"  # .env is loaded over it
    assert aider_model(["aider", "--model", "sonnet"], env, work) == "sonnet"  # the argv first of all
    assert model_in_argv(["aider", "--4o"]) == "gpt-4o" and model_in_argv(["aider", "--model=x"]) == "x"


def test_the_lane_label_and_family_follow_aiders_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {"HOME": str(tmp_path), "AIDER_MODEL": "gpt-4o", "ANTHROPIC_API_KEY": "k", "LANES_X": "no"}
    run = resolved(AIDER, environ, tmp_path)
    assert run.model == "gpt-4o" and provider_family(run) == "openai"
    assert resolved(AIDER, {"HOME": str(tmp_path), "ANTHROPIC_API_KEY": "k"}, tmp_path).model == "sonnet"
    lead = resolved(dataclasses.replace(AIDER, model="gpt-4.1"), environ, tmp_path)  # the lead's model is passed
    assert lead.render_argv("t", tmp_path)[-2:] == ["--model", "gpt-4.1"] and provider_family(lead) == "openai"
    monkeypatch.setenv("AIDER_MODEL", "claude-sonnet-4-5")  # the preset outside a lane (a reviewer)
    assert provider_family(AIDER) == "anthropic"
    assert resolved(PRESETS["claude"], environ, tmp_path) is PRESETS["claude"]
