"""How a provider run ended, in the results of PRODUCT.md.

The order matters: our own stop reasons (stall, wall clock, the lead) outrank whatever the agent printed
while dying; then what the CLI said in a structured field (`Channel.error`, a `ProviderError`) outranks
every text pattern, whatever the exit code (aider and gemini exit 0 after an API error; only a rate limit
or overload followed by exit 0 is left to the worktree: work done is OK, none a retry); then a config
error stops the chain even if the CLI also printed a quota line. A rate limit, an overload or a 5xx is
LANE-FAILED marked `retry`: the supervisor tries the same provider again in the lane after a back-off
(`supervisor.retry`) before the chain moves on. `NO-CHANGES` (exit 0, nothing changed) is decided by the
supervisor after the run, from the worktree (`supervisor.retry.settle`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lanes_tui.engine.config.provider_facts import BUDGET_KINDS, CONFIG_KINDS, RETRY_KINDS

if TYPE_CHECKING:
    from lanes_tui.engine.channels.base import ProviderError
    from lanes_tui.engine.config.providers import ProviderConfig

RESOURCE_PATTERNS = (
    r"No space left on device",
    r"Cannot allocate memory",
    r"\bMemoryError\b",
    r"Too many open files",
)


@dataclass(frozen=True)
class Watch:
    """One output pattern, with the lower-case text every match must contain (None: no such text).

    Case-insensitive regular expressions cannot use the fast literal search, so a 64 KiB block took
    20 ms per kind and capped a flooding lane at 3 MB/s (B8). A block whose lower-cased text lacks
    the pattern's leading literal cannot match, and that test runs at memory speed.
    """

    pattern: re.Pattern[str]
    literal: str | None

    @classmethod
    def of(cls, source: str) -> Watch:
        return cls(re.compile(source, re.IGNORECASE | re.MULTILINE), required_literal(source))

    def search(self, text: str, lowered: str) -> re.Match[str] | None:
        if self.literal is not None and self.literal not in lowered:
            return None
        return self.pattern.search(text)

    def may_match(self, lowered: bytes) -> bool:
        """Whether raw output, lower-cased as bytes (ASCII only: the literal is ASCII), can match."""
        return self.literal is None or self.literal.encode() in lowered


@dataclass
class PatternScanner:
    """Matches output against a provider's budget and config-error patterns, a block of lines at a time.

    The patterns match line by line (`re.MULTILINE`; `.` never crosses a newline), so a block scan
    finds what scanning each line would; a hit keeps the whole line it was found on.
    """

    budget: tuple[Watch, ...]
    config: tuple[Watch, ...]
    resource: tuple[Watch, ...] = field(default_factory=lambda: tuple(Watch.of(p) for p in RESOURCE_PATTERNS))
    #: The provider's `retry_patterns`: rate limited / overloaded, try again later.
    retry: tuple[Watch, ...] = ()
    budget_hit: str | None = None
    config_hit: str | None = None
    resource_hit: str | None = None
    retry_hit: str | None = None

    @classmethod
    def from_patterns(cls, budget: Iterable[str], config: Iterable[str], retry: Iterable[str] = ()) -> PatternScanner:
        return cls(tuple(Watch.of(p) for p in budget if p), tuple(Watch.of(p) for p in config if p),
                   retry=tuple(Watch.of(p) for p in retry if p))

    def feed_bytes(self, block: bytes) -> None:
        """A block of raw output: decoded only when some pattern's literal is in it (rarely)."""
        lowered = block.lower()
        if any(watch.may_match(lowered) for kind in _KINDS
               if getattr(self, f"{kind}_hit") is None for watch in getattr(self, kind)):
            self.feed(block.decode("utf-8", errors="replace"))

    def feed(self, text: str) -> None:
        """One line, or a block of lines."""
        lowered: str | None = None
        for kind in _KINDS:
            if getattr(self, f"{kind}_hit") is not None:
                continue
            for watch in getattr(self, kind):
                lowered = text.lower() if lowered is None else lowered
                match = watch.search(text, lowered)
                if match is not None:
                    setattr(self, f"{kind}_hit", _line_at(text, match.start()))
                    break


_KINDS = ("config", "budget", "resource", "retry")

#: Characters that end a pattern's leading literal: anything with a meaning in a regular expression.
_SPECIAL = frozenset("\\.^$*+?{}[]|()")


def required_literal(source: str) -> str | None:
    """The lower-cased text at the start of `source` that every match contains, if 3 characters or more.

    Conservative: an alternation at the top level gives None, and the pattern is searched on every
    block; a literal stops at its first non-ASCII character, whose case folding `str.lower` may not
    mirror. (Claude's `Invalid API key · Fix …` had no literal at all for its `·`, so every block of a
    Claude lane was decoded and searched: 24 ns a byte, 0.4 % of a core at the 180 KB/s of B3's
    `--traffic claude`.)
    """
    if _top_level_alternation(source):
        return None
    text = source[2:] if source.startswith("\\b") else source
    end = 0
    while end < len(text) and text[end] not in _SPECIAL:
        end += 1
    literal = text[:end]
    if end < len(text) and text[end] in "*?{":  # the last character is optional or repeated
        literal = literal[:-1]
    literal = literal[:next((at for at, char in enumerate(literal) if not char.isascii()), len(literal))]
    if len(literal) < 3:
        return None
    return literal.lower()


def _top_level_alternation(source: str) -> bool:
    """Whether `source` has a `|` outside every group (escapes and character classes skipped)."""
    depth, index, in_class = 0, 0, False
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth <= 0:
            return True
        index += 1
    return False


def _line_at(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start:end if end >= 0 else len(text)].strip()[:300]




@dataclass(frozen=True)
class Classification:
    result: str
    reason: str
    #: Try the same provider again in the lane after a back-off (a rate limit, an overload, a 5xx).
    retry: bool = False
    #: When the provider's quota resets (seconds since the epoch), from its structured error.
    reset_at: float | None = None
    #: The structured error's kind this came from (`ProviderError.kind`), for `doctor`; None from text.
    error: str | None = None


def classify(returncode: int | None, scanner: PatternScanner, *, stalled: bool = False,
             timed_out: float | None = None, stopped_by_lead: bool = False,
             spawn_error: str | None = None, error: ProviderError | None = None,
             provider: ProviderConfig | None = None) -> Classification:
    if spawn_error is not None:
        return Classification("CONFIG-ERROR", spawn_error)
    if stalled:
        return Classification("LANE-STALLED", "the watchdog saw no activity")
    if timed_out is not None:
        return Classification("LANE-FAILED", f"wall-clock limit of {timed_out:g}s reached")
    if stopped_by_lead:
        return Classification("LANE-FAILED", "stopped by the lead")
    if error is not None and not (returncode == 0 and error.kind in RETRY_KINDS):
        return from_error(error, provider)
    if scanner.config_hit is not None:
        return Classification("CONFIG-ERROR", f"config error: {scanner.config_hit}")
    if returncode not in (None, 0):  # 127 (not found) for every CLI, gemini's 41 (auth) and 55 (trust), …
        from lanes_tui.engine.config.cli_facts import config_exit_codes, exit_meaning

        if returncode in config_exit_codes(provider):
            return Classification("CONFIG-ERROR", f"exit {returncode}: {exit_meaning(provider, returncode)}")
    if scanner.budget_hit is not None:
        return Classification("OUT-OF-BUDGET", f"out of budget: {scanner.budget_hit}")
    if returncode == 0:
        return Classification("OK", "exit 0")
    if scanner.retry_hit is not None:
        return retry_from_text(scanner.retry_hit, provider)
    if scanner.resource_hit is not None:
        return Classification("FAILED-RESOURCE", scanner.resource_hit)
    if returncode == -9:
        return Classification("FAILED-RESOURCE", "killed by SIGKILL (out of memory?)")
    return Classification("LANE-FAILED", f"exit {returncode}")


def from_error(error: ProviderError, provider: ProviderConfig | None) -> Classification:
    """The result of a structured API error (the table in `channels.base`), its reason for the why column."""
    name = provider.name if provider is not None else "the provider"
    if error.kind in CONFIG_KINDS:
        from lanes_tui.engine.config.provider_errors import error_fix

        fix = error_fix(provider, error.kind) if provider is not None else ""
        return Classification("CONFIG-ERROR", f"{CONFIG_KINDS[error.kind]} ({name}): {error.detail}"
                              + (f"; fix: {fix}" if fix else ""), error=error.kind)
    if error.kind in RETRY_KINDS:
        return Classification("LANE-FAILED", f"{RETRY_KINDS[error.kind].format(name=name)}: {error.detail}", retry=True,
                              error=error.kind)
    reset = error.reset_at if error.kind == "usage_limit" else None
    return Classification("OUT-OF-BUDGET", BUDGET_KINDS.get(error.kind, "out of budget at {name}").format(name=name)
                          + f": {error.detail}", reset_at=reset, error=error.kind)


def retry_from_text(line: str, provider: ProviderConfig | None) -> Classification:
    """A `retry_patterns` line: the same retry in the lane as a structured rate limit."""
    name = provider.name if provider is not None else "the provider"
    return Classification("LANE-FAILED", f"rate limited by {name}: {line}", retry=True)
