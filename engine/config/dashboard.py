"""The `[dashboard]` table: how the dashboard looks for this lead, kept between runs.

`theme` is the Textual theme chosen in the command palette ("Change theme"). The dashboard writes it
to the lead's own config (`config.layers`: `$XDG_CONFIG_HOME/lanes-tui/config.toml`), never to the
repository's, so one choice holds in every repository; a repository's `[dashboard] theme` wins there.
Which names exist is Textual's to know, so the dashboard checks the name; here it is only a string.

Split from `settings` to keep that module small, like `notify`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lanes_tui.engine.config.tiers import TableChecks

__all__ = ["DashboardConfig", "parse_dashboard"]

_DASHBOARD_KEYS = ("theme",)


@dataclass(frozen=True)
class DashboardConfig:
    """The `[dashboard]` table as validated."""

    #: A Textual theme name (`textual-dark`, `nord`, …); None: Textual's default.
    theme: str | None = None


def parse_dashboard(checks: TableChecks, raw: dict[str, Any]) -> DashboardConfig:
    """`[dashboard] theme = "nord"` → DashboardConfig; ConfigError naming the key at the first mistake."""
    checks.unknown_keys("dashboard", raw, _DASHBOARD_KEYS)
    theme = raw.get("theme")
    return DashboardConfig(theme=None if theme is None else checks.string("dashboard.theme", theme).strip())
