"""The `[providers.NAME]` tables, read: each over its preset (or a new provider with its own argv).

Split from `settings` (which calls `parse_providers` first, since the chains, tiers and review name
providers) so that module stays the parser's frame and its small tables. Every check here goes
through the parser's own typed getters (`ProviderChecks`), so an error still names key, line and fix.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NoReturn, Protocol

from lanes_tui.engine.config import providers as pv
from lanes_tui.engine.config.context_keys import parse_provider_context
from lanes_tui.engine.config.key_lines import did_you_mean, shown
from lanes_tui.engine.config.providers import PRESETS, ProviderConfig

__all__ = ["NAME_RE", "ProviderChecks", "parse_providers", "provider_values"]

#: A provider's (or a task type's) name: what a TOML key and a lane's chain can hold plainly.
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
#: The keys a `[providers.NAME]` table may set: every ProviderConfig field but the name itself.
_PROVIDER_KEYS = tuple(f.name for f in dataclasses.fields(ProviderConfig) if f.name != "name")


class ProviderChecks(Protocol):
    """What these parsers need of the config parser (`settings._Parser`)."""

    def fail(self, key: str, what: str, fix: str) -> NoReturn: ...

    def unknown_keys(self, table: str, values: dict[str, Any], valid: tuple[str, ...]) -> None: ...

    def string(self, key: str, value: object, *, empty: bool = False) -> str: ...

    def strings(self, key: str, value: object, *, empty_list: bool = True) -> tuple[str, ...]: ...

    def integer(self, key: str, value: object, *, minimum: int) -> int: ...

    def env_patterns(self, key: str, value: object) -> tuple[str, ...]: ...

    def writable_paths(self, key: str, value: object) -> tuple[str, ...]: ...


def parse_providers(checks: ProviderChecks, raw: dict[str, Any]) -> Mapping[str, ProviderConfig]:
    """`[providers.NAME]` tables over the presets → {name: ProviderConfig}; ConfigError at the first mistake."""
    result = dict(PRESETS)
    for name, table in raw.items():
        key = f"providers.{name}"
        if not NAME_RE.match(name):
            checks.fail(key, f"invalid provider name {name!r}", "use letters, digits, '-' or '_'")
        if not isinstance(table, dict):
            checks.fail(key, f"must be a table, got {shown(table)}", f"write it as [providers.{name}]")
        checks.unknown_keys(key, table, _PROVIDER_KEYS)
        if name not in PRESETS and "argv" not in table:
            checks.fail(key, f"provider {name!r} is not a preset and has no argv",
                        f'add argv = ["my-agent", "--model", "{{model}}"] (presets: {", ".join(PRESETS)})')
        base = PRESETS.get(name) or ProviderConfig(name, (), "stdin", "", "", 2, "plain", (), ())
        values = provider_values(checks, key, table)
        if "env" in values:  # the lead's names add to the preset's credentials, never replace them
            values["env"] = tuple(dict.fromkeys((*base.env, *values["env"])))
        if "writable" in values:  # and the lead's folders add to the preset's own state
            values["writable"] = tuple(dict.fromkeys((*base.writable, *values["writable"])))
        result[name] = dataclasses.replace(base, **values)
    return MappingProxyType(result)


def provider_values(checks: ProviderChecks, key: str, table: dict[str, Any]) -> dict[str, Any]:
    """The keys present in one `[providers.NAME]` table, checked, as ProviderConfig values."""
    values: dict[str, Any] = {}
    if "argv" in table:
        argv = checks.strings(f"{key}.argv", table["argv"], empty_list=False)
        for part in argv:
            unknown = [p for p in pv.placeholders_in(part) if p not in pv.PLACEHOLDERS]
            if unknown:
                checks.fail(f"{key}.argv", f"unknown placeholder {{{unknown[0]}}} in {part!r}",
                            did_you_mean(unknown[0], pv.PLACEHOLDERS))
            if problem := pv.forbidden_arg(part):
                checks.fail(f"{key}.argv", *problem)
        values["argv"] = argv
    for name, choices in (("prompt", pv.PROMPT_MODES), ("channel", pv.CHANNELS)):
        if name in table:
            value = checks.string(f"{key}.{name}", table[name])
            if value not in choices:
                checks.fail(f"{key}.{name}", f"{value!r} is not a valid {name}",
                            did_you_mean(value, choices))
            values[name] = value
    for name in ("model", "effort"):
        if name in table:
            values[name] = checks.string(f"{key}.{name}", table[name], empty=True)
    if "family" in table:
        values["family"] = checks.string(f"{key}.family", table["family"]).strip()
    if "max" in table:
        values["max"] = checks.integer(f"{key}.max", table["max"], minimum=1)
    values.update(parse_provider_context(checks, key, table))
    if "env" in table:
        values["env"] = checks.env_patterns(f"{key}.env", table["env"])
    if "writable" in table:
        values["writable"] = checks.writable_paths(f"{key}.writable", table["writable"])
    for name in ("budget_patterns", "config_patterns", "retry_patterns"):
        if name in table:
            patterns = checks.strings(f"{key}.{name}", table[name])
            for pattern in patterns:
                try:
                    pv.compile_pattern(pattern)
                except (re.error, OverflowError, RecursionError) as exc:  # `a{4294967296}`, `((((…`
                    checks.fail(f"{key}.{name}", f"pattern {pattern!r} is not a valid regex: {exc}",
                                r"fix the regex (escape literal ( [ . with a backslash)")
            values[name] = patterns
    return values
