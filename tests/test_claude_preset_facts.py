"""The claude preset's facts against what Claude Code 2.1.328 really does (tests/real_cli/samples/claude/):
its text fallback patterns, the variables it documents, and where it writes its state."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lanes_tui.engine.config.provider_facts import CLAUDE_RETRY_LINES
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.lanes.confine import provider_writable
from lanes_tui.engine.lanes.env import passes

SAMPLES = Path(__file__).parent / "real_cli" / "samples" / "claude"
CLAUDE = PRESETS["claude"]


def _text(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(("sample", "which"), [
    ("error_billing.jsonl", "budget"),
    ("error_usage_limit_gateway.jsonl", "budget"),
    ("error_usage_limit_api_key.jsonl", "budget"),  # "Usage limit reached for this plan." (the GLM pattern)
    ("error_auth.jsonl", "config"),
    ("error_forbidden.jsonl", "config"),
    ("error_rate_limit.jsonl", "retry"),
    ("error_overloaded.jsonl", "retry"),
    ("error_server.jsonl", "retry"),
])
def test_the_text_fallback_knows_each_error_line(sample: str, which: str) -> None:
    text = _text(sample)
    budget, config = CLAUDE.budget_match(text), CLAUDE.config_match(text)
    retry = next((p for p in CLAUDE_RETRY_LINES if re.search(p, text, re.IGNORECASE)), None)
    assert {"budget": budget, "config": config, "retry": retry}[which] is not None
    if which != "budget":
        assert budget is None
    if which != "config":
        assert config is None


@pytest.mark.parametrize("sample", ["run_write_bash_allowed.jsonl", "run_write_bash_denied.jsonl"])
def test_a_normal_run_matches_no_pattern(sample: str) -> None:
    text = _text(sample)
    assert CLAUDE.budget_match(text) is None and CLAUDE.config_match(text) is None
    assert not any(re.search(p, text, re.IGNORECASE) for p in CLAUDE_RETRY_LINES)


@pytest.mark.parametrize("name", ["DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING",
                                  "API_TIMEOUT_MS", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN",
                                  "CLAUDE_CODE_MAX_RETRIES", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                                  "DISABLE_PROMPT_CACHING_HAIKU", "BASH_DEFAULT_TIMEOUT_MS"])
def test_claudes_documented_variables_reach_its_lane(name: str) -> None:
    assert passes(name, CLAUDE.env)


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "DISABLE", "API_KEY", "AWS_SECRET_ACCESS_KEY", "CLAUDECODE"])
def test_other_variables_still_do_not(name: str) -> None:
    assert not passes(name, CLAUDE.env)


def test_claudes_state_is_writable_where_claude_config_dir_puts_it(tmp_path: Path) -> None:
    home, config_dir = tmp_path / "home", tmp_path / "claude-config"
    plain = provider_writable(CLAUDE.writable, {"HOME": str(home)})
    assert plain == [home / ".claude", home / ".claude.json", home / ".config" / "claude"]
    moved = provider_writable(CLAUDE.writable, {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config_dir) + "/"})
    assert moved == [*plain, config_dir]
    assert config_dir.is_dir()  # made, so the kernel's rule has something to hold on to


@pytest.mark.parametrize("value", ["", "relative/dir", "/", "HOME"])
def test_a_config_dir_that_is_not_a_folder_of_its_own_adds_nothing(tmp_path: Path, value: str) -> None:
    home = tmp_path / "home"
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home) if value == "HOME" else value}
    assert provider_writable(("$CLAUDE_CONFIG_DIR/",), env) == []
