"""The `[tiers]` table: a plan ticket's `tier` (heavy / standard / light) → a provider and a model.

A plan says how hard a ticket is, not which CLI runs it; the lead maps each tier to a provider (and
optionally a model) once, in `.lanes/config.toml`. No tier has a default: a plan naming a tier that is
not configured is refused by `plans.validate`, so nothing runs on a guessed provider.

Split from `settings` to keep that module small. It reads through the parser's own checks (the
`TableChecks` protocol below) rather than importing `settings`, which imports this module.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NoReturn, Protocol

from lanes_tui.engine.config.providers import ProviderConfig

__all__ = ["TIER_NAMES", "TableChecks", "TierConfig", "parse_tiers"]

#: The only tier names; `plans.model.TIERS` is the same tuple (a test holds them equal).
TIER_NAMES = ("heavy", "standard", "light")
_TIER_KEYS = ("provider", "model")


@dataclass(frozen=True)
class TierConfig:
    """One `[tiers.NAME]` table: the provider a ticket of this tier runs, and its model if set."""

    name: str
    provider: str
    #: None: the provider's own `model` (its preset or `[providers.NAME] model`).
    model: str | None = None

    def provider_config(self, providers: Mapping[str, ProviderConfig]) -> ProviderConfig:
        """The provider as a lane of this tier runs it: the tier's model, when set, replaces the provider's."""
        base = providers[self.provider]
        return base if self.model is None else dataclasses.replace(base, model=self.model)


class TableChecks(Protocol):
    """What `parse_tiers` needs of the config parser: errors that name key, line and fix."""

    def fail(self, key: str, what: str, fix: str) -> NoReturn: ...

    def string(self, key: str, value: object, *, empty: bool = False) -> str: ...

    def unknown_keys(self, table: str, values: dict[str, Any], valid: tuple[str, ...]) -> None: ...


def parse_tiers(checks: TableChecks, raw: dict[str, Any],
                providers: Mapping[str, ProviderConfig]) -> Mapping[str, TierConfig]:
    """`[tiers.heavy] provider = "claude"`, `model = "…"` → {name: TierConfig}; ConfigError at the first mistake."""
    checks.unknown_keys("tiers", raw, TIER_NAMES)
    result: dict[str, TierConfig] = {}
    for name, table in raw.items():
        key = f"tiers.{name}"
        if not isinstance(table, dict):
            checks.fail(key, f"must be a table, got {json.dumps(table, default=str)}",
                        f'write it as a [{key}] section with provider = "claude"')
        checks.unknown_keys(key, table, _TIER_KEYS)
        if "provider" not in table:
            checks.fail(key, f"tier {name!r} has no provider",
                        f'add provider = "NAME" (one of {", ".join(providers)})')
        provider = checks.string(f"{key}.provider", table["provider"])
        if provider not in providers:
            import difflib  # only this error needs it: kept out of every process that reads a valid config

            close = difflib.get_close_matches(provider, list(providers), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            checks.fail(f"{key}.provider", f"tier {name!r} names unknown provider {provider!r}",
                        f"{hint}(valid: {', '.join(providers)}) (or add [providers.{provider}])")
        model = checks.string(f"{key}.model", table["model"]) if "model" in table else None
        result[name] = TierConfig(name, provider, model)
    return MappingProxyType(result)
