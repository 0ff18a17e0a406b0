"""The codex preset as shipped (issue 29): where codex keeps its state is writable under the lane's
fence wherever CODEX_HOME puts it, and its warnings are not config errors."""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.config.cli_facts import argv_under_fence
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.lanes.confine import provider_writable


def test_codex_home_is_writable_where_the_agents_environment_puts_it(tmp_path: Path) -> None:
    home, moved = tmp_path / "home", tmp_path / "elsewhere" / "codex"
    found = provider_writable(PRESETS["codex"].writable, {"HOME": str(home), "CODEX_HOME": str(moved)})
    assert found == [home / ".codex", moved]
    assert moved.is_dir() and (home / ".codex").is_dir(), "a folder a rule holds on to is made"


def test_without_codex_home_only_the_default_folder_is_writable(tmp_path: Path) -> None:
    found = provider_writable(PRESETS["codex"].writable, {"HOME": str(tmp_path)})
    assert found == [tmp_path / ".codex"]


def test_codex_warnings_are_no_config_error() -> None:
    codex = PRESETS["codex"]
    warning = ("Model metadata for `gpt-5-codex` not found. Defaulting to fallback metadata; this can degrade "
               "performance and cause issues.")
    assert codex.config_match(warning) is None and codex.budget_match(warning) is None
    assert codex.config_match("unexpected status 401 Unauthorized: Incorrect API key provided") is not None


def test_under_the_kernels_fence_codexs_own_sandbox_is_off_and_kept_without_it(tmp_path: Path) -> None:
    """bubblewrap (codex's workspace-write) cannot start under Landlock: the fence replaces it there."""
    codex = PRESETS["codex"]
    argv = codex.render_argv("task", tmp_path)
    assert argv[argv.index("-s") + 1] == "workspace-write"
    fenced = argv_under_fence(codex.channel, argv, contained=True)
    assert fenced[fenced.index("-s") + 1] == "danger-full-access"
    assert [a for a in fenced if a != "danger-full-access"] == [a for a in argv if a != "workspace-write"]
    assert argv_under_fence(codex.channel, argv, contained=False) == argv
    claude = PRESETS["claude"]
    assert argv_under_fence(claude.channel, claude.render_argv("t", tmp_path), contained=True) == \
        claude.render_argv("t", tmp_path)
