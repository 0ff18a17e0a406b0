"""How full an agent's context window is: the used tokens, the model's window, and when to warn.

Why a meter of its own: an agent whose context fills up gets compacted or cut off mid-task (Claude
summarises its history, Codex refuses the next request), and the lead sees it only afterwards, as a
lane that forgot what it was doing. The figure is the prompt of the agent's LATEST model request —
everything the model read that time, cached or not — against the model's window; not the lane's token
total, which adds every request up and says nothing about how full the window is.

Only a provider that reports the latest request's prompt has the meter (docs/providers.md): Claude's
stream-json (each `assistant` message's usage) and Codex's `token_count` events. Codex's `exec --json`
`turn.completed` usage is the thread's total over all requests (its recorded sample: three requests of
1200 tokens report 3600), and Gemini's `result` stats are totals too: those lanes, aider and sim have
no context figure, shown as "–", never a wrong number.

The window, first found wins: `[providers.NAME] context_window` (the lead's word), the window the CLI
itself reported (Claude's `modelUsage.<model>.contextWindow`, Codex's `model_context_window`), then
`CONTEXT_WINDOWS` by the model's name, then `DEFAULT_WINDOW`. The warning threshold is a fraction:
`[providers.NAME] context_warn`, else `[lanes] context_warn`, else `DEFAULT_WARN`.

`meters.json` sits in the lane's folder, where an agent can write: `parse_context` reads its `context`
object back tolerantly, as `samples.parse_sample` reads a sample (a bad figure is no meter, never a crash).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["CONTEXT_WINDOWS", "DEFAULT_WARN", "DEFAULT_WINDOW", "ContextMeter", "parse_context", "window_for"]

#: The window of a model whose name matches none of `CONTEXT_WINDOWS` (and whose CLI reports none).
DEFAULT_WINDOW = 128_000
#: A lane whose context is at least this full is flagged (`[lanes] context_warn`).
DEFAULT_WARN = 0.85
#: Where the window came from, for `status --json` and the tooltip.
WINDOW_SOURCES = ("config", "reported", "table", "default")
#: The largest window a file may claim (a hand edit's 10**40 is no window).
_MAX_TOKENS = 2**53

#: Context windows in tokens by model name: the longest key the name starts with wins, tried on the
#: whole name and after each `/` (`openrouter/anthropic/claude-…`). A family's usual window: a model
#: with a larger one (Claude's `[1m]` variants) is read from its name or from what the CLI reports.
CONTEXT_WINDOWS: Mapping[str, int] = MappingProxyType({
    "claude": 200_000, "sonnet": 200_000, "opus": 200_000, "haiku": 200_000,
    "gpt-5": 272_000, "gpt-4.1": 1_047_576, "gpt-4o": 128_000, "o3": 200_000, "o4": 200_000,
    "gemini": 1_048_576,
})
#: Claude Code's suffix for a model run with the 1M-token window (`sonnet[1m]`, `claude-sonnet-4-5[1m]`).
_ONE_MILLION_SUFFIX = "[1m]"


def window_for(model: str) -> tuple[int, str]:
    """The window of `model` from the table (`table`), or `DEFAULT_WINDOW` (`default`)."""
    name = model.strip().lower()
    if name.endswith(_ONE_MILLION_SUFFIX):
        return 1_000_000, "table"
    candidates = [name] + [name.split("/", i)[-1] for i in range(1, name.count("/") + 1)]
    for candidate in candidates:
        keys = [key for key in CONTEXT_WINDOWS if candidate.startswith(key)]
        if keys:
            return CONTEXT_WINDOWS[max(keys, key=len)], "table"
    return DEFAULT_WINDOW, "default"


@dataclass(frozen=True)
class ContextMeter:
    """One agent's context: `used` tokens of the latest request against `window`, flagged from `warn`."""

    used: int
    window: int
    #: The fraction (0–1] from which the lane is flagged as near its limit.
    warn: float = DEFAULT_WARN
    #: Where `window` came from: one of `WINDOW_SOURCES`.
    source: str = "default"

    @property
    def fraction(self) -> float:
        """How full the window is: 0.63 for 63 %; above 1 if the agent went past a configured window."""
        return self.used / self.window if self.window > 0 else 0.0

    @property
    def near(self) -> bool:
        """At or past the warning threshold: the lead should look before the agent is compacted."""
        return self.fraction >= self.warn

    def to_json(self) -> dict[str, Any]:
        """The `context` object of `meters.json` and `status --json` (`near` for scripts; read back, it
        is derived again)."""
        return {"used": self.used, "window": self.window, "fraction": round(self.fraction, 4),
                "warn": self.warn, "source": self.source, "near": self.near}


def parse_context(data: object) -> ContextMeter | None:
    """The `context` object of a `meters.json` read back, or None when there is none or it is not one
    (a count that is no count, a window of 0, a threshold outside (0, 1]): never raises."""
    if not isinstance(data, Mapping):
        return None
    used, window, warn = _count(data.get("used")), _count(data.get("window")), data.get("warn", DEFAULT_WARN)
    if used is None or not window:
        return None
    if isinstance(warn, bool) or not isinstance(warn, int | float) or not math.isfinite(warn) or not 0 < warn <= 1:
        warn = DEFAULT_WARN
    source = data.get("source")
    return ContextMeter(used, window, float(warn),
                        source if isinstance(source, str) and source in WINDOW_SOURCES else "default")


def _count(value: object) -> int | None:
    """A token count from the file: a whole number from 0 below `_MAX_TOKENS`, else None."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_TOKENS
    return value if ok and isinstance(value, int) else None
