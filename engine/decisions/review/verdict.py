"""Who reviews a lane, and what the reviewer said: the pure half of the cross-family review.

`choose_reviewer` picks the first provider of the `[review] chain` whose model family differs from
every provider that wrote in the lane: a model reviewing its own family's work shares its blind spots.
`parse_verdict` reads the reviewer's output. It is strict on purpose: only a line `REVIEW: CLEAN` or
`REVIEW: BLOCKING` decides, the last one wins, and anything else is MISSING, never CLEAN: a reviewer
that crashed, ran out of budget or rambled must not wave a lane through.

No processes, no files: the review run (worktree, supervisor, packet) builds on these two functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from lanes_tui.engine.config.families import provider_family
from lanes_tui.engine.config.providers import ProviderConfig
from lanes_tui.engine.config.review import ReviewConfig

__all__ = ["TAIL_LINES", "VERDICTS", "Finding", "Verdict", "choose_reviewer", "parse_verdict"]

VERDICTS = ("CLEAN", "BLOCKING", "MISSING")
#: How many of the reviewer's last lines a MISSING verdict keeps, so the lead can see what went wrong.
TAIL_LINES = 20
#: `REVIEW: CLEAN` alone on its line, with markdown around or inside it (`**REVIEW:** CLEAN`, `` `…` ``).
_VERDICT_RE = re.compile(r"^[\s*_`>#-]*REVIEW[\s*_`]*:[\s*_`]*(CLEAN|BLOCKING)[\s*_`.!]*$", re.IGNORECASE)
#: `- path:line: text` or `- path: text` (also `*` bullets); the path has no spaces.
_FINDING_RE = re.compile(r"^\s*[-*]\s+(?P<path>[^\s:]+)(?::(?P<line>\d+))?(?::\d+)?:\s+(?P<text>\S.*)$")


@dataclass(frozen=True)
class Finding:
    """One `- path:line: text` line of a review; `line` is None when the reviewer gave none."""

    path: str
    line: int | None
    text: str


@dataclass(frozen=True)
class Verdict:
    """A parsed review: CLEAN, BLOCKING or MISSING, the findings before the verdict line, and why."""

    verdict: str  # one of VERDICTS
    findings: tuple[Finding, ...] = ()
    #: For MISSING: why there is no verdict ("no REVIEW: line"); otherwise where the verdict was read.
    reason: str = ""
    #: For MISSING: the last TAIL_LINES lines of the reviewer's output, to show the lead.
    tail: str = ""


def choose_reviewer(review_config: ReviewConfig, providers: Mapping[str, ProviderConfig],
                    writer_families: set[str], task_type: str, tier: str | None) -> tuple[str | None, str]:
    """(provider name, why) of the lane's reviewer, or (None, why not) when the lane gets no review.

    None when `[review]` is off, when it is `cross-heavy` and the lane is neither tier heavy nor type
    hard, or when no provider of the chain comes from a family other than every writer's.
    """
    if review_config.mode == "off":
        return None, 'review is off ([review] mode = "off")'
    if not review_config.applies(task_type, tier):
        return None, (f"review is cross-heavy and this lane is tier {tier or 'none'}, type {task_type} "
                      "(only tier heavy or type hard lanes are reviewed)")
    if not review_config.chain:
        return None, "no reviewer: the [review] chain is empty (add chain = [\"NAME\", …])"
    writers = ", ".join(sorted(writer_families)) or "none"
    seen: list[str] = []
    for name in review_config.chain:
        provider = providers.get(name)
        if provider is None:  # the config loader refuses this; a hand-built config may not
            seen.append(f"{name} (not configured)")
            continue
        family = provider_family(provider)
        if family not in writer_families:
            return name, f"{name} ({family}) reviews: written by {writers}"
        seen.append(f"{name} ({family})")
    return None, (f"no reviewer of another family: the chain {', '.join(seen)} shares the writers' "
                  f"families ({writers})")


def parse_verdict(output: str) -> Verdict:
    """The reviewer's verdict: the last `REVIEW: CLEAN` / `REVIEW: BLOCKING` line decides; none is MISSING."""
    lines = output.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        match = _VERDICT_RE.match(lines[index])
        if match:
            verdict = match.group(1).upper()
            findings = tuple(f for f in map(_finding, lines[:index]) if f is not None)
            return Verdict(verdict, findings, reason=f"REVIEW: {verdict} on line {index + 1}")
    tail = "\n".join(line.rstrip() for line in lines[-TAIL_LINES:]).strip("\n")
    reason = "no REVIEW: line" + ("" if output.strip() else " (the reviewer printed nothing)")
    return Verdict("MISSING", (), reason=reason, tail=tail)


def _finding(line: str) -> Finding | None:
    """A finding line as a Finding, or None. Backticks and bold around the path are tolerated; a path
    without a line number must look like one (a `/` or a `.`), so a bullet like `- Note: …` is prose."""
    match = _FINDING_RE.match(line.replace("`", "").replace("**", ""))
    if match is None:
        return None
    path, number = match.group("path"), match.group("line")
    if number is None and "/" not in path and "." not in path:
        return None
    return Finding(path, int(number) if number is not None else None, match.group("text").strip())
