"""Would Gemini CLI run headless in a lane? What `doctor` checks before a lane finds out (docs/providers.md).

Gemini CLI 0.61 refuses three things in a lane, each before it does any work: a folder it does not trust
(every lane is a new worktree: exit 55 unless `--skip-trust` or `GEMINI_CLI_TRUST_WORKSPACE=true`), an
approval mode that withholds its edit and shell tools (no `--approval-mode yolo`: the lane ends with no
changes), and an auth type it cannot use headless (exit 41). The auth type is the one gemini itself
picks: `security.auth.selectedType` of its settings (system settings over the user's), else the first of
its variables that is set — and `GOOGLE_GEMINI_BASE_URL` alone picks `gateway`, which it refuses headless.

Pure reading: the settings files and the environment a lane would get are passed in, nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: Where gemini reads system-wide settings unless GEMINI_CLI_SYSTEM_SETTINGS_PATH says otherwise (Linux).
SYSTEM_SETTINGS = Path("/etc/gemini-cli/settings.json")
#: The fix for a gateway or a local server: the auth type that sends GEMINI_API_KEY to the base URL.
API_KEY_SETTINGS = '{"security": {"auth": {"selectedType": "gemini-api-key"}}}'


def is_gemini(argv: Sequence[str]) -> bool:
    return bool(argv) and Path(argv[0]).name == "gemini"


def settings_files(env: Mapping[str, str], home: Path) -> list[Path]:
    """The settings gemini reads, the one that wins last: the user's, then the system's."""
    user_home = Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home
    system_path = env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
    system = Path(system_path) if system_path else SYSTEM_SETTINGS
    return [user_home / ".gemini" / "settings.json", system]


def _read(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _get(settings: Mapping[str, Any], *keys: str) -> Any:
    value: Any = settings
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def auth_type(settings: Sequence[Mapping[str, Any]], env: Mapping[str, str]) -> str | None:
    """The auth type gemini would use headless (its `validateNonInteractiveAuth`), or None."""
    for one in reversed(settings):
        chosen = _get(one, "security", "auth", "selectedType") or one.get("selectedAuthType")
        if isinstance(chosen, str) and chosen:
            return chosen
    if env.get("GOOGLE_GENAI_USE_GCA") == "true":
        return "oauth-personal"
    if env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
        return "vertex-ai"
    if env.get("GOOGLE_GEMINI_BASE_URL"):
        return "gateway"
    if env.get("GEMINI_API_KEY"):
        return "gemini-api-key"
    if env.get("CLOUD_SHELL") == "true" or env.get("GEMINI_CLI_USE_COMPUTE_ADC") == "true":
        return "compute-default-credentials"
    return None


def _approval(argv: Sequence[str]) -> str:
    for index, part in enumerate(argv):
        if part in ("-y", "--yolo"):
            return "yolo"
        if part == "--approval-mode" and index + 1 < len(argv):
            return argv[index + 1]
        if part.startswith("--approval-mode="):
            return part.split("=", 1)[1]
    return "default"


def problems(argv: Sequence[str], lane_env: Mapping[str, str], home: Path) -> list[str]:
    """What stops gemini in a lane, each with its fix; `lane_env` is what a lane receives (the allow-list)."""
    found: list[str] = []
    if "--skip-trust" not in argv and lane_env.get("GEMINI_CLI_TRUST_WORKSPACE") != "true":
        found.append("gemini does not trust a lane's new worktree and exits 55: keep `--skip-trust` in its argv "
                     "(the preset has it) or set GEMINI_CLI_TRUST_WORKSPACE=true")
    mode = _approval(argv)
    if mode != "yolo":
        what = "no shell (its tests cannot run)" if mode == "auto_edit" else "read-only tools (no changes)"
        found.append(f"gemini with --approval-mode {mode} gets {what} headless: use `--approval-mode yolo` "
                     "(the preset's; the kernel's fence keeps it in the worktree)")
    settings = [_read(path) for path in settings_files(lane_env, home)]
    if any(_get(s, "security", "auth", "useExternal") is True for s in settings):
        return found
    kind = auth_type(settings, lane_env)
    user = settings_files(lane_env, home)[0]
    if kind is None:
        found.append(f"gemini has no auth type for a headless run (exit 41): set GEMINI_API_KEY, or "
                     f"security.auth.selectedType in {user}")
    elif kind == "gateway":
        found.append(f"gemini's auth type is `gateway` (what GOOGLE_GEMINI_BASE_URL picks when no selectedType is "
                     f"set), which it refuses headless (exit 41): write security.auth.selectedType in {user}: "
                     f"{API_KEY_SETTINGS}")
    elif kind == "gemini-api-key" and not lane_env.get("GEMINI_API_KEY"):
        found.append("gemini's auth type is gemini-api-key but a lane gets no GEMINI_API_KEY (exit 41): export it")
    elif kind == "vertex-ai" and not (lane_env.get("GOOGLE_API_KEY") or (
            lane_env.get("GOOGLE_CLOUD_PROJECT") and lane_env.get("GOOGLE_CLOUD_LOCATION"))):
        found.append("gemini's auth type is vertex-ai but a lane gets neither GOOGLE_CLOUD_PROJECT and "
                     "GOOGLE_CLOUD_LOCATION nor GOOGLE_API_KEY (exit 41): export them")
    elif kind == "oauth-personal" and not (user.parent / "oauth_creds.json").exists():
        found.append(f"gemini's auth type is oauth-personal but {user.parent / 'oauth_creds.json'} is missing: "
                     "log in once with `gemini` (interactive)")
    elif kind not in ("gemini-api-key", "vertex-ai", "oauth-personal", "compute-default-credentials",
                      "cloud-shell"):
        found.append(f"gemini's auth type {kind!r} is refused headless (exit 41, 'Invalid auth method "
                     f"selected'): write security.auth.selectedType in {user}: {API_KEY_SETTINGS}")
    return found
