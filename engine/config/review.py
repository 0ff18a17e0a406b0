"""The `[review]` table: whether a lane's diff is reviewed by a model of another family, and by whom.

Off by default: a review costs a second agent run per lane. `cross-heavy` reviews only the lanes that
matter most (tier `heavy` or type `hard`), `cross-all` every lane. The `chain` lists the reviewer
providers in order; the first whose family differs from every provider that wrote in the lane is
chosen (`decisions.review.verdict.choose_reviewer`).

Split from `settings` to keep that module small, like `tiers`: it reads through the parser's own
checks (the `ReviewChecks` protocol below) rather than importing `settings`, which imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from lanes_tui.engine.config.key_lines import did_you_mean
from lanes_tui.engine.config.providers import ProviderConfig
from lanes_tui.engine.config.tiers import TableChecks

__all__ = ["REVIEW_MODES", "ReviewChecks", "ReviewConfig", "parse_review"]

#: `off`: no review; `cross-heavy`: lanes of tier heavy or type hard; `cross-all`: every lane.
REVIEW_MODES = ("off", "cross-heavy", "cross-all")
_REVIEW_KEYS = ("mode", "chain", "timeout_s", "max_diff_kb", "slots")


@dataclass(frozen=True)
class ReviewConfig:
    """The `[review]` table as validated: the defaults are review off."""

    mode: str = "off"
    #: Reviewer providers, first first; each is a key of `Config.providers`.
    chain: tuple[str, ...] = ()
    #: How long a reviewer may run before its review counts as MISSING.
    timeout_s: float = 600
    #: A scoped diff larger than this (KiB) is not sent to a reviewer.
    max_diff_kb: int = 200
    #: Reviews running at once on the machine, across repositories.
    slots: int = 1

    def applies(self, task_type: str, tier: str | None) -> bool:
        """True if a lane of this type and tier is reviewed under `mode`."""
        if self.mode == "cross-all":
            return True
        return self.mode == "cross-heavy" and (tier == "heavy" or task_type == "hard")


class ReviewChecks(TableChecks, Protocol):
    """What `parse_review` needs besides the tiers' checks: lists and numbers that name key, line and fix."""

    def strings(self, key: str, value: object, *, empty_list: bool = True) -> tuple[str, ...]: ...

    def integer(self, key: str, value: object, *, minimum: int) -> int: ...

    def number(self, key: str, value: object, *, positive: bool) -> float: ...


def parse_review(checks: ReviewChecks, raw: dict[str, Any],
                 providers: Mapping[str, ProviderConfig]) -> ReviewConfig:
    """`[review] mode = "cross-all"`, `chain = ["codex", "claude"]`, … → ReviewConfig; ConfigError at the first
    mistake. An empty chain is allowed: with review on, every lane's review is then MISSING with that reason."""
    checks.unknown_keys("review", raw, _REVIEW_KEYS)
    mode = checks.string("review.mode", raw.get("mode", "off"))
    if mode not in REVIEW_MODES:
        checks.fail("review.mode", f"{mode!r} is not a review mode", did_you_mean(mode, REVIEW_MODES))
    chain = checks.strings("review.chain", raw.get("chain", []))
    for name in chain:
        if name not in providers:
            checks.fail("review.chain", f"review chain names unknown provider {name!r}",
                        did_you_mean(name, list(providers)) + f" (or add [providers.{name}])")
    if len(set(chain)) != len(chain):
        checks.fail("review.chain", "review chain lists a provider twice", "name each provider once")
    return ReviewConfig(
        mode=mode,
        chain=chain,
        timeout_s=checks.number("review.timeout_s", raw.get("timeout_s", 600), positive=True),
        max_diff_kb=checks.integer("review.max_diff_kb", raw.get("max_diff_kb", 200), minimum=1),
        slots=checks.integer("review.slots", raw.get("slots", 1), minimum=1),
    )
