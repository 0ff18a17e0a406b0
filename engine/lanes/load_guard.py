"""The load wording guard: a prompt that asks an agent to load the machine is refused (issue 10, item 4).

Several agents share one machine, often a laptop or a 2-core VM; one that runs a stress test or a
benchmark takes it from the others and from the lead. A lead who wants that says so with
`run --allow-load` (kept on the lane record, so `recover --relaunch` keeps it). The check is a word
list, case-insensitive and on whole words only: "distressed" does not trip it, and neither does a
word that is part of a file name or path ("benchmarks.md", "tests/load-test/"): it catches the
wording of a task, not every mention of a file.

Quoted lines (starting with `>`) are not read: recover quotes a failed attempt's findings that way
(gate output may well print "benchmark"), and quoted text is material, not the task.
"""

from __future__ import annotations

import re

from lanes_tui.engine.core.errors import LanesError

__all__ = ["LOAD_PHRASES", "check_load_wording", "find_load_wording"]

#: Phrases that ask to load the machine. A space in a phrase matches any run of spaces or hyphens
#: ("stress test", "stress-test", "stress  test"); `(all|the)` style optional words are spelled out.
LOAD_PHRASES = (
    "stress test", "stress tests", "stress testing", "stress the machine", "stress the cpu", "stress the system",
    "load test", "load tests", "load testing", "loadtest",
    "saturate", "saturates", "saturating",
    "benchmark", "benchmarks", "benchmarking", "benchmarked",
    "fork bomb", "forkbomb",
    "burn cpu", "burn the cpu", "burn all cpu", "burn all cpus", "burn all the cpus", "burn cores",
    "burn all cores", "burn all the cores", "burn every core",
    "max out the cpu", "max out the cpus", "max out cpu", "max out the cores", "max out all cores",
    "max out the machine", "max out memory", "max out the memory",
    "exhaust memory", "exhaust the memory", "fill the memory", "fill all memory",
    "as many workers as possible", "as many processes as possible", "as many threads as possible",
)


def _pattern(phrase: str) -> str:
    return r"[\s-]+".join(re.escape(word) for word in phrase.split())


#: Longest phrases first, so the refusal names "stress testing", not just "stress test".
_LOAD_RE = re.compile(
    r"(?<![\w./-])(" + "|".join(_pattern(p) for p in sorted(LOAD_PHRASES, key=len, reverse=True))
    + r")(?![\w/-]|\.\w)",
    re.IGNORECASE)


def find_load_wording(prompt: str) -> tuple[str, int] | None:
    """The first load phrase in the prompt as written and its line number (1-based), or None."""
    for number, line in enumerate(prompt.splitlines(), start=1):
        if line.lstrip().startswith(">"):
            continue
        match = _LOAD_RE.search(line)
        if match:
            return " ".join(match.group(1).split()), number
    return None


def check_load_wording(prompt: str, *, allow_load: bool) -> None:
    """LanesError naming the words and their line when the prompt asks to load the machine."""
    if allow_load:
        return
    found = find_load_wording(prompt)
    if found is not None:
        words, line = found
        raise LanesError(f'the prompt asks to load the machine ("{words}" in line {line})',
                         "run it with --allow-load if that is what you want")
