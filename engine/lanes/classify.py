"""How a provider run ended, in the six results of PRODUCT.md.

The order matters: a config error stops the chain even if the CLI also printed a quota line, and
our own stop reasons (stall, wall clock) outrank whatever the agent printed while dying.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

RESOURCE_PATTERNS = (
    r"No space left on device",
    r"Cannot allocate memory",
    r"\bMemoryError\b",
    r"Too many open files",
)


@dataclass
class PatternScanner:
    """Matches each output line against a provider's budget and config-error patterns."""

    budget: tuple[re.Pattern[str], ...]
    config: tuple[re.Pattern[str], ...]
    resource: tuple[re.Pattern[str], ...] = field(
        default_factory=lambda: tuple(re.compile(p, re.IGNORECASE) for p in RESOURCE_PATTERNS))
    budget_hit: str | None = None
    config_hit: str | None = None
    resource_hit: str | None = None

    @classmethod
    def from_patterns(cls, budget: Iterable[str], config: Iterable[str]) -> PatternScanner:
        return cls(tuple(re.compile(p, re.IGNORECASE) for p in budget),
                   tuple(re.compile(p, re.IGNORECASE) for p in config))

    def feed(self, line: str) -> None:
        if len(line) > 8192:
            line = line[:8192]
        if self.config_hit is None and any(p.search(line) for p in self.config):
            self.config_hit = line.strip()[:300]
        if self.budget_hit is None and any(p.search(line) for p in self.budget):
            self.budget_hit = line.strip()[:300]
        if self.resource_hit is None and any(p.search(line) for p in self.resource):
            self.resource_hit = line.strip()[:300]


@dataclass(frozen=True)
class Classification:
    result: str
    reason: str


def classify(returncode: int | None, scanner: PatternScanner, *, stalled: bool = False,
             timed_out: float | None = None, stopped_by_lead: bool = False,
             spawn_error: str | None = None) -> Classification:
    if spawn_error is not None:
        return Classification("CONFIG-ERROR", spawn_error)
    if stalled:
        return Classification("LANE-STALLED", "the watchdog saw no activity")
    if timed_out is not None:
        return Classification("LANE-FAILED", f"wall-clock limit of {timed_out:g}s reached")
    if stopped_by_lead:
        return Classification("LANE-FAILED", "stopped by the lead")
    if scanner.config_hit is not None:
        return Classification("CONFIG-ERROR", f"config error: {scanner.config_hit}")
    if returncode == 127:
        return Classification("CONFIG-ERROR", "exit 127: command not found")
    if scanner.budget_hit is not None:
        return Classification("OUT-OF-BUDGET", f"out of budget: {scanner.budget_hit}")
    if returncode == 0:
        return Classification("OK", "exit 0")
    if scanner.resource_hit is not None:
        return Classification("FAILED-RESOURCE", scanner.resource_hit)
    if returncode == -9:
        return Classification("FAILED-RESOURCE", "killed by SIGKILL (out of memory?)")
    return Classification("LANE-FAILED", f"exit {returncode}")
