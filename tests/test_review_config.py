"""Model families of the providers and the `[review]` table (docs/review.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lanes_tui.engine.config.families import model_family, provider_family
from lanes_tui.engine.config.providers import PRESETS, ProviderConfig
from lanes_tui.engine.config.review import ReviewConfig
from lanes_tui.engine.config.settings import Config, parse_config
from lanes_tui.engine.core.errors import ConfigError


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    root = tmp_path / "project"
    root.mkdir()
    return root


def parse(text: str, project: Path) -> Config:
    return parse_config(text, path=project / ".lanes" / "config.toml", repo=project)


def config_error(text: str, project: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse(text, project)
    return info.value


# --- Model families ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "family"), [
    ("claude", "anthropic"), ("codex", "openai"), ("gemini", "google"), ("sim", "sim"),
    # aider: the family of the model it reads itself (tests/test_aider_facts.py)
])
def test_each_preset_has_a_family(name: str, family: str) -> None:
    assert provider_family(PRESETS[name]) == family


@pytest.mark.parametrize(("model", "family"), [
    ("claude-sonnet-4-5", "anthropic"), ("anthropic/claude-3-opus", "anthropic"), ("opus", "anthropic"),
    ("gpt-4o", "openai"), ("o1-mini", "openai"), ("o3", "openai"), ("o4-mini", "openai"),
    ("openai/gpt-5", "openai"), ("GPT-4.1", "openai"),
    ("gemini-2.5-pro", "google"), ("google/gemini-exp", "google"), ("gemini/gemini-1.5-flash", "google"),
    ("openrouter/anthropic/claude-3.5-sonnet", "anthropic"), ("openrouter/openai/o3-mini", "openai"),
    ("deepseek-chat", None), ("", None), ("openrouter/deepseek/deepseek-r1", None),
])
def test_model_family_from_the_model_name(model: str, family: str | None) -> None:
    assert model_family(model) == family


@pytest.mark.parametrize(("model", "family"), [
    ("gpt-4o", "openai"), ("claude-3-7-sonnet", "anthropic"), ("gemini/gemini-2.5-pro", "google"),
    ("deepseek/deepseek-coder", "aider"),
])
def test_aider_takes_the_family_of_its_model(model: str, family: str) -> None:
    assert provider_family(dataclasses.replace(PRESETS["aider"], model=model)) == family


def test_aider_model_override_in_the_config_moves_its_family(project: Path) -> None:
    config = parse('[providers.aider]\nmodel = "gpt-4.1"\n', project)
    assert provider_family(config.providers["aider"]) == "openai"


def test_family_override(project: Path) -> None:
    config = parse('[providers.claude]\nmodel = "glm-4.6"\nfamily = "zhipu"\n'
                   '[providers.aider]\nfamily = "deepseek"\n', project)
    assert config.providers["claude"].family == "zhipu"
    assert provider_family(config.providers["claude"]) == "zhipu"
    assert provider_family(config.providers["aider"]) == "deepseek"
    assert provider_family(config.providers["codex"]) == "openai"


def test_a_preset_keeps_its_family_when_its_model_changes(project: Path) -> None:
    config = parse('[providers.claude]\nmodel = "gpt-looking-name"\n', project)
    assert provider_family(config.providers["claude"]) == "anthropic"


def test_a_custom_provider_derives_its_family_or_is_its_own(project: Path) -> None:
    config = parse('[providers.mine]\nargv = ["mine", "{model}"]\nmodel = "claude-opus-4"\n'
                   '[providers.other]\nargv = ["other"]\nmodel = "llama-3"\n', project)
    assert provider_family(config.providers["mine"]) == "anthropic"
    assert provider_family(config.providers["other"]) == "other"


def test_positional_constructor_still_works() -> None:
    provider = ProviderConfig("x", ("x",), "stdin", "gpt-5", "", 1, "plain", (), ())
    assert provider.family == ""
    assert provider_family(provider) == "openai"


@pytest.mark.parametrize(("value", "message"), [
    ('""', "[providers.claude.family] must not be empty"),
    ('"  "', "[providers.claude.family] must not be empty"),
    ("3", "[providers.claude.family] must be a string, got integer 3"),
])
def test_family_must_be_a_non_empty_string(project: Path, value: str, message: str) -> None:
    error = config_error(f"[providers.claude]\nfamily = {value}\n", project)
    assert message in str(error)
    assert error.line == 2


# --- [review] ---------------------------------------------------------------------------------------

def test_review_defaults_to_off(project: Path) -> None:
    config = parse("", project)
    assert config.review == ReviewConfig()
    assert (config.review.mode, config.review.chain, config.review.timeout_s, config.review.max_diff_kb,
            config.review.slots) == ("off", (), 600, 200, 1)


def test_review_table_is_read(project: Path) -> None:
    config = parse('[review]\nmode = "cross-heavy"\nchain = ["codex", "claude", "sim"]\n'
                   'timeout_s = 90.5\nmax_diff_kb = 64\nslots = 2\n', project)
    assert config.review == ReviewConfig("cross-heavy", ("codex", "claude", "sim"), 90.5, 64, 2)


def test_review_chain_may_name_a_custom_provider(project: Path) -> None:
    config = parse('[providers.mine]\nargv = ["mine"]\n[review]\nmode = "cross-all"\nchain = ["mine"]\n', project)
    assert config.review.chain == ("mine",)


def test_config_without_review_keeps_working_when_built_by_hand(project: Path) -> None:
    config = parse("", project)
    rebuilt = Config(config.lanes, config.chains, config.providers, config.gates, None)
    assert rebuilt.review.mode == "off"


@pytest.mark.parametrize(("text", "key", "line", "what", "fix"), [
    ('[review]\nmode = "cross-hevy"\n', "review.mode", 2, "'cross-hevy' is not a review mode",
     "did you mean 'cross-heavy'?"),
    ('[review]\nmode = "on"\n', "review.mode", 2, "'on' is not a review mode", "valid: off, cross-heavy, cross-all"),
    ('[review]\nmode = true\n', "review.mode", 2, "must be a string, got boolean true", "put it in quotes"),
    ('[review]\nchain = ["codx"]\n', "review.chain", 2, "review chain names unknown provider 'codx'",
     "did you mean 'codex'?"),
    ('[review]\nchain = ["codx"]\n', "review.chain", 2, "review chain names unknown provider 'codx'",
     "(or add [providers.codx])"),
    ('[review]\nchain = "codex"\n', "review.chain", 2, "must be an array of strings", 'write it as ["a", "b"]'),
    ('[review]\nchain = ["codex", "codex"]\n', "review.chain", 2, "lists a provider twice",
     "name each provider once"),
    ('[review]\ntimeout_s = 0\n', "review.timeout_s", 2, "must be greater than 0, got 0", "use a number"),
    ('[review]\ntimeout_s = "10"\n', "review.timeout_s", 2, "must be a number of seconds", "without quotes"),
    ('[review]\nmax_diff_kb = 0\n', "review.max_diff_kb", 2, "must be at least 1, got 0", "use a number >= 1"),
    ('[review]\nmax_diff_kb = 1.5\n', "review.max_diff_kb", 2, "must be a whole number", "at least 1"),
    ('[review]\nslots = 0\n', "review.slots", 2, "must be at least 1, got 0", "use a number >= 1"),
    ('[review]\nslot = 2\n', "review.slot", 2, "unknown key 'slot' in [review]", "did you mean 'slots'?"),
    ('review = "on"\n', "review", 1, "review must be a table", "write it as a [review] section"),
    ('[reviews]\nmode = "off"\n', "reviews", 1, "unknown table or key 'reviews'", "did you mean 'review'?"),
])
def test_review_config_errors_name_key_line_and_fix(project: Path, text: str, key: str, line: int,
                                                    what: str, fix: str) -> None:
    error = config_error(text, project)
    assert error.key == key
    assert error.line == line
    assert what in error.what
    assert fix in (error.fix or "")
    assert str(error).startswith(f"{project / '.lanes' / 'config.toml'}:{line}: [{key}] ")
