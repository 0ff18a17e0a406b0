"""The context meter's keys (`state.context`), read: `[lanes] context_warn` for every lane, and
`[providers.NAME] context_window` / `context_warn` for one provider.

Split from `settings` (which calls it while reading those tables) so the parser stays one concern per
module. The threshold is per provider too because the CLIs act at different fullness: a lead who knows
that one CLI compacts its history at 80 % wants that lane flagged before, the others later.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn, Protocol

from lanes_tui.engine.config.key_lines import shown

__all__ = ["parse_context_warn", "parse_provider_context"]

#: No model has a window this large; a bigger number is a typo (an extra zero or two).
MAX_WINDOW = 100_000_000


class ContextChecks(Protocol):
    """What these parsers need of the config parser (`settings._Parser`)."""

    def fail(self, key: str, what: str, fix: str) -> NoReturn: ...


def parse_context_warn(checks: ContextChecks, key: str, value: object) -> float:
    """A warning threshold: a fraction above 0 and at most 1 (0.85 flags a lane from 85 % full)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        checks.fail(key, f"must be a fraction, got {shown(value)}",
                    "write e.g. 0.85 (no quotes) to flag from 85 % full")
    if not math.isfinite(value) or not 0 < value <= 1:
        checks.fail(key, f"must be above 0 and at most 1, got {value}",
                    "write a fraction of the window, e.g. 0.85 for 85 % (1 flags only a full window)")
    return float(value)


def parse_provider_context(checks: ContextChecks, key: str, table: dict[str, Any]) -> dict[str, Any]:
    """The context keys present in a `[providers.NAME]` table, as ProviderConfig values."""
    values: dict[str, Any] = {}
    if "context_window" in table:
        window = table["context_window"]
        if isinstance(window, bool) or not isinstance(window, int):
            checks.fail(f"{key}.context_window", f"must be a whole number of tokens, got {shown(window)}",
                        "write e.g. context_window = 200000 (no quotes, no k suffix)")
        if not 0 < window <= MAX_WINDOW:
            checks.fail(f"{key}.context_window", f"must be from 1 to {MAX_WINDOW:,} tokens, got {window}",
                        "write the model's window in tokens, e.g. 200000; leave it out to use what the CLI "
                        "reports or the model family's window")
        values["context_window"] = window
    if "context_warn" in table:
        values["context_warn"] = parse_context_warn(checks, f"{key}.context_warn", table["context_warn"])
    return values
