"""`doctor`'s gemini checks (config.gemini_setup): trust, approval mode and headless auth, each as Gemini
CLI 0.61 decides them (tests/real_cli/test_gemini.py runs the real CLI into each refusal)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lanes_tui.engine.config.gemini_setup import auth_type, problems
from lanes_tui.engine.config.providers import PRESETS
from tests.helpers import write_config

SHIPPED = PRESETS["gemini"].argv
BARE = ("gemini", "-p", "{prompt}", "--output-format", "stream-json", "-m", "{model}")


def home_with(tmp_path: Path, settings: object | None) -> Path:
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    if settings is not None:
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return home


def no_system(tmp_path: Path) -> dict[str, str]:
    """The machine's /etc/gemini-cli/settings.json must not decide a test: point gemini's path away."""
    return {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(tmp_path / "no-system-settings.json")}


def test_the_shipped_preset_with_an_api_key_has_no_problem(tmp_path: Path) -> None:
    env = {**no_system(tmp_path), "GEMINI_API_KEY": "k"}
    assert problems(SHIPPED, env, home_with(tmp_path, None)) == []


def test_the_old_argv_is_untrusted_and_read_only(tmp_path: Path) -> None:
    found = problems(BARE, {**no_system(tmp_path), "GEMINI_API_KEY": "k"}, home_with(tmp_path, None))
    assert len(found) == 2
    assert "exits 55" in found[0] and "--skip-trust" in found[0]
    assert "read-only" in found[1] and "--approval-mode yolo" in found[1]
    trusted = {**no_system(tmp_path), "GEMINI_API_KEY": "k", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    auto_edit = (*BARE, "--approval-mode", "auto_edit")
    assert ["no shell" in p for p in problems(auto_edit, trusted, home_with(tmp_path, None))] == [True]


@pytest.mark.parametrize(("settings", "env", "kind", "problem"), [
    (None, {}, None, "no auth type"),
    (None, {"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:1", "GEMINI_API_KEY": "k"}, "gateway", "exit 41"),
    ({"security": {"auth": {"selectedType": "gemini-api-key"}}}, {"GOOGLE_GEMINI_BASE_URL": "http://x"},
     "gemini-api-key", "no GEMINI_API_KEY"),
    ({"security": {"auth": {"selectedType": "gemini-api-key"}}},
     {"GOOGLE_GEMINI_BASE_URL": "http://x", "GEMINI_API_KEY": "k"}, "gemini-api-key", None),
    ({"security": {"auth": {"selectedType": "vertex-ai"}}}, {"GOOGLE_CLOUD_PROJECT": "p"}, "vertex-ai",
     "GOOGLE_CLOUD_LOCATION"),
    ({"security": {"auth": {"selectedType": "oauth-personal"}}}, {}, "oauth-personal", "oauth_creds.json"),
    ({"security": {"auth": {"useExternal": True}}}, {}, None, None),
])
def test_headless_auth_as_gemini_picks_it(tmp_path: Path, settings: object, env: dict[str, str], kind: str | None,
                                          problem: str | None) -> None:
    home = home_with(tmp_path, settings)
    full = {**no_system(tmp_path), **env}
    assert auth_type([json.loads(json.dumps(settings or {}))], full) == kind
    found = problems(SHIPPED, full, home)
    assert (found[0] if found else None) is None if problem is None else problem in found[0], found


def test_system_settings_win_over_the_users(tmp_path: Path) -> None:
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"security": {"auth": {"selectedType": "gateway"}}}))
    home = home_with(tmp_path, {"security": {"auth": {"selectedType": "gemini-api-key"}}})
    env = {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system), "GEMINI_API_KEY": "k"}
    found = problems(SHIPPED, env, home)
    assert len(found) == 1 and "`gateway`" in found[0] and "exit 41" in found[0], found


def test_doctor_names_the_gemini_fix_for_a_chained_gemini(repo: Path, tmp_path: Path) -> None:
    """The real `doctor`, with a stand-in `gemini` on PATH and a base URL but no auth type."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gemini").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "gemini").chmod(0o755)
    home = home_with(tmp_path, None)
    write_config(repo, chains='backend = ["gemini"]')
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home), "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
           "GEMINI_API_KEY": "k", **no_system(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "lanes_tui.app", "doctor", "--json"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    found = [p for p in json.loads(proc.stdout)["problems"] if p.startswith("chain provider 'gemini'")]
    assert len(found) == 1 and "selectedType" in found[0] and "exit 41" in found[0], found
    assert proc.returncode == 1
