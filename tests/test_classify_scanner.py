"""The output scanner (issue 15): a block of lines is scanned at once, a pattern's regular expression
runs only on blocks holding its leading literal, and it finds exactly what matching each line with
each pattern found, for every provider's shipped patterns and for odd user patterns."""

from __future__ import annotations

import re

import pytest

from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.lanes.classify import PatternScanner, Watch, required_literal

LINES = [
    'API Error: 429 {"error":{"code":"1113","type":"1113"}}',
    "Usage limit reached for 5 hour. Your limit will reset at 2026-12-01 21:00",
    "You've hit your usage limit. Upgrade to Pro or try again in 3 hours.",
    "RESOURCE_EXHAUSTED: daily quota for gemini-2.5-pro",
    "Error: invalid model selection",
    "Model metadata for gpt-9 not found",
    "ordinary output line 42",
    "write: No space left on device",
    "SIM-OUT-OF-BUDGET at step 3",
    "SIM-CONFIG-ERROR bad flag",
]


def _separate(patterns: tuple[str, ...], line: str) -> bool:
    return any(re.search(p, line, re.IGNORECASE) for p in patterns)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_one_alternation_finds_what_the_separate_patterns_found(name: str) -> None:
    provider = PRESETS[name]
    for line in LINES:
        scanner = PatternScanner.from_patterns(provider.budget_patterns, provider.config_patterns)
        scanner.feed(line)
        assert (scanner.budget_hit is not None) == _separate(provider.budget_patterns, line), (name, line)
        assert (scanner.config_hit is not None) == _separate(provider.config_patterns, line), (name, line)
    resource = PatternScanner.from_patterns((), ())
    resource.feed("OSError: [Errno 28] No space left on device")
    assert resource.resource_hit is not None


def test_odd_user_patterns_still_match() -> None:
    # A global flag, a back-reference: no leading literal to test, so the expression always runs.
    scanner = PatternScanner.from_patterns([r"(?x) rate \s limit", r"(\w+) again \1"], [])
    assert [w.literal for w in scanner.budget] == [None, None]
    scanner.feed("try again again")
    assert scanner.budget_hit is None  # "(\w+) again \1" needs the word twice around "again"
    scanner.feed("RATE LIMIT hit")
    assert scanner.budget_hit == "RATE LIMIT hit"
    twice = PatternScanner.from_patterns([r"(\w+) again \1", r"quota"], [])
    twice.feed("later again later")
    assert twice.budget_hit == "later again later"


def test_a_block_of_lines_is_scanned_at_once_and_the_hit_is_its_whole_line() -> None:
    provider = PRESETS["claude"]
    scanner = PatternScanner.from_patterns(provider.budget_patterns, provider.config_patterns)
    scanner.feed("working\n  Usage limit reached for 5 hour. Resets at 21:00  \nmore output")
    assert scanner.budget_hit == "Usage limit reached for 5 hour. Resets at 21:00"
    assert scanner.config_hit is None and scanner.resource_hit is None
    anchored = PatternScanner.from_patterns([r"^quota$"], [])
    anchored.feed("no quota here\nquota\n")
    assert anchored.budget_hit == "quota"  # ^ and $ hold at each line of the block
    crossing = PatternScanner.from_patterns([r"rate.*limit"], [])
    crossing.feed("rate\nlimit")
    assert crossing.budget_hit is None  # `.` never crosses a line


def test_the_leading_literal_is_what_every_match_must_contain() -> None:
    assert required_literal(r"API Error: 429.*\"type\"") == "api error: 429"
    assert required_literal(r"\bMemoryError\b") == "memoryerror"
    assert required_literal("Invalid API key · Fix external API key") == "invalid api key "  # up to the `·`
    assert required_literal("Ünknown model") is None and required_literal("ab·cdef") is None
    assert required_literal(r"Quota exceeded\. Check your plan") == "quota exceeded"
    assert required_literal(r"colou?r") == "colo"  # the `u` is optional
    assert required_literal(r"ab*") is None  # too short once the repeated `b` is dropped
    assert required_literal(r"quota|limit") is None  # an alternation: no single literal is required
    assert required_literal(r"API Error: 429 (?:1113|1308)") == "api error: 429 "  # inside a group
    assert required_literal(r"limit [|] (a|b) x") == "limit "
    assert required_literal(r"^quota") is None and required_literal(r"(?i)quota") is None
    assert required_literal("Überlauf") is None  # non-ASCII: lower() may not fold as re does


def test_a_block_without_the_literal_never_runs_the_expression() -> None:
    class Counting:
        def __init__(self) -> None:
            self.calls = 0

        def search(self, text: str) -> re.Match[str] | None:
            self.calls += 1
            return re.search("usage limit reached", text, re.IGNORECASE)

    counting = Counting()
    watch = Watch(counting, "usage limit reached")  # type: ignore[arg-type]
    block = "\n".join(f"line {i}: nothing to see" for i in range(2000))
    assert watch.search(block, block.lower()) is None and counting.calls == 0
    hit = block + "\nUSAGE LIMIT REACHED for today"
    assert watch.search(hit, hit.lower()) is not None and counting.calls == 1


def test_raw_output_is_decoded_only_when_a_literal_is_in_it() -> None:
    scanner = PatternScanner.from_patterns([r"Usage limit reached for"], [r"Unknown Model"])
    quiet = b"\n".join(b"line %d: nothing" % i for i in range(500))
    scanner.feed_bytes(quiet)
    assert scanner.budget_hit is None and scanner.config_hit is None
    scanner.feed_bytes(quiet + "\nUSAGE LIMIT REACHED FOR today \u2014 retry later".encode())
    assert scanner.budget_hit == "USAGE LIMIT REACHED FOR today \u2014 retry later"
    scanner.feed_bytes(b"OSError: No space left on device")
    assert scanner.resource_hit == "OSError: No space left on device"
