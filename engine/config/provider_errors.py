"""What fixes a provider the API refused (`ProviderError` kinds auth, forbidden, model, trust).

One function over the data in `config.provider_facts`, shared by the lane's why column
(`lanes.classify`) and `lanes-tui doctor`, so both name the same fix for the same refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.aider_model import aider_family_model
from lanes_tui.engine.config.families import provider_family
from lanes_tui.engine.config.provider_facts import AUTH_FIX, CONFIG_KINDS, ERROR_FIX, KEY_BY_FAMILY
from lanes_tui.engine.config.providers import ProviderConfig

__all__ = ["error_fix", "refused_providers"]


def error_fix(provider: ProviderConfig, kind: str) -> str:
    """The fix for `provider` refused for `kind`: the credential its CLI reads (by preset name, else by
    program; for aider, the key of its model's family), or what to change in its config ("" if none)."""
    if kind != "auth":
        template = ERROR_FIX.get(kind)
        return template.format(name=provider.name, model=provider.model) if template else ""
    fix = AUTH_FIX.get(provider.name) or AUTH_FIX.get(Path(provider.executable()).name)
    if fix:
        return fix
    key = KEY_BY_FAMILY.get(provider_family(provider))
    if key:
        return f"set {key}, the key of its model {provider.model or aider_family_model(provider)!r}"
    return f"set the API key {provider.name} reads and let it through with [providers.{provider.name}] env"


def refused_providers(providers: Mapping[str, ProviderConfig],
                      last_runs: Mapping[str, tuple[float, str, Any]]) -> list[str]:
    """For `doctor`: a problem for each provider whose last run the API refused for its configuration (a
    structured auth, forbidden, model or trust error), naming the fix the lane's why column named.
    `last_runs` maps a provider's name to (when, lane id, its last `ProviderAttempt`)."""
    found = []
    for name, (_, lane_id, attempt) in sorted(last_runs.items()):
        if attempt.error in CONFIG_KINDS and name in providers:
            found.append(f"provider {name}: its last run (lane {lane_id}) was refused, "
                         f"{CONFIG_KINDS[attempt.error]}: {error_fix(providers[name], attempt.error)}")
    return found
