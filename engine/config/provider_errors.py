"""What fixes a provider the API refused (`ProviderError` kinds auth, forbidden, model, trust).

One function over the data in `config.provider_facts`, shared by the lane's why column
(`lanes.classify`) and `lanes-tui doctor`, so both name the same fix for the same refusal.
"""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.config.provider_facts import AUTH_FIX, ERROR_FIX, KEY_BY_FAMILY
from lanes_tui.engine.config.providers import ProviderConfig, provider_family

__all__ = ["error_fix"]


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
        return f"set {key}, the key of its model {provider.model!r}"
    return f"set the API key {provider.name} reads and let it through with [providers.{provider.name}] env"
