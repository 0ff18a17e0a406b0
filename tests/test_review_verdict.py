"""Choosing a reviewer of another model family, and reading its verdict (docs/review.md)."""

from __future__ import annotations

import dataclasses

import pytest

from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.config.review import ReviewConfig
from lanes_tui.engine.decisions.review.verdict import TAIL_LINES, Finding, Verdict, choose_reviewer, parse_verdict

ALL = ReviewConfig(mode="cross-all", chain=("codex", "claude", "gemini"))
HEAVY = dataclasses.replace(ALL, mode="cross-heavy")


# --- choose_reviewer --------------------------------------------------------------------------------

def test_off_means_no_reviewer() -> None:
    name, reason = choose_reviewer(ReviewConfig(chain=("codex",)), PRESETS, {"anthropic"}, "hard", "heavy")
    assert name is None
    assert "review is off" in reason


def test_first_chain_provider_of_another_family() -> None:
    assert choose_reviewer(ALL, PRESETS, {"anthropic"}, "backend", None)[0] == "codex"
    name, reason = choose_reviewer(ALL, PRESETS, {"openai"}, "backend", None)
    assert name == "claude"
    assert "claude (anthropic)" in reason and "openai" in reason


def test_every_writer_family_is_excluded() -> None:
    assert choose_reviewer(ALL, PRESETS, {"openai", "anthropic"}, "ui", None)[0] == "gemini"


def test_no_reviewer_of_another_family() -> None:
    name, reason = choose_reviewer(ALL, PRESETS, {"openai", "anthropic", "google"}, "ui", None)
    assert name is None
    assert reason.startswith("no reviewer of another family")
    assert "codex (openai)" in reason and "gemini (google)" in reason


def test_empty_chain() -> None:
    name, reason = choose_reviewer(ReviewConfig(mode="cross-all"), PRESETS, {"anthropic"}, "ui", None)
    assert name is None
    assert "chain is empty" in reason


@pytest.mark.parametrize(("task_type", "tier", "reviewed"), [
    ("hard", None, True), ("backend", "heavy", True), ("hard", "light", True),
    ("backend", None, False), ("ui", "standard", False), ("docs", "light", False),
])
def test_cross_heavy_reviews_only_heavy_or_hard_lanes(task_type: str, tier: str | None, reviewed: bool) -> None:
    name, reason = choose_reviewer(HEAVY, PRESETS, {"anthropic"}, task_type, tier)
    assert (name == "codex") is reviewed
    if not reviewed:
        assert name is None
        assert "cross-heavy" in reason


def test_cross_all_reviews_every_lane() -> None:
    assert choose_reviewer(ALL, PRESETS, {"google"}, "docs", "light")[0] == "codex"


def test_aider_is_judged_by_its_model() -> None:
    providers = {**PRESETS, "aider": dataclasses.replace(PRESETS["aider"], model="gpt-4o")}
    config = ReviewConfig(mode="cross-all", chain=("aider", "sim"))
    assert choose_reviewer(config, providers, {"openai"}, "ui", None)[0] == "sim"
    assert choose_reviewer(config, providers, {"anthropic"}, "ui", None)[0] == "aider"


def test_a_sim_lane_gets_a_sim_reviewer_only_from_another_family() -> None:
    config = ReviewConfig(mode="cross-all", chain=("sim",))
    assert choose_reviewer(config, PRESETS, {"anthropic"}, "ui", None)[0] == "sim"
    assert choose_reviewer(config, PRESETS, {"sim"}, "ui", None)[0] is None


def test_unconfigured_chain_entry_is_skipped() -> None:
    config = ReviewConfig(mode="cross-all", chain=("ghost", "codex"))
    assert choose_reviewer(config, PRESETS, {"anthropic"}, "ui", None)[0] == "codex"


# --- parse_verdict ----------------------------------------------------------------------------------

def test_clean() -> None:
    verdict = parse_verdict("Looked at the diff.\nAll good.\nREVIEW: CLEAN\n")
    assert verdict == Verdict("CLEAN", (), reason="REVIEW: CLEAN on line 3")


def test_blocking_with_findings() -> None:
    output = ("Some notes first.\n"
              "- src/app.py:12: the lock is never released\n"
              "- docs/x.md: says the opposite of the code\n"
              "- `engine/a.py:3:7`: off by one\n"
              "- Note: this is prose, not a finding\n"
              "REVIEW: BLOCKING\n")
    verdict = parse_verdict(output)
    assert verdict.verdict == "BLOCKING"
    assert verdict.findings == (
        Finding("src/app.py", 12, "the lock is never released"),
        Finding("docs/x.md", None, "says the opposite of the code"),
        Finding("engine/a.py", 3, "off by one"),
    )


def test_blocking_without_findings_is_still_blocking() -> None:
    verdict = parse_verdict("I do not like it.\nREVIEW: BLOCKING")
    assert (verdict.verdict, verdict.findings) == ("BLOCKING", ())


@pytest.mark.parametrize("line", [
    "**REVIEW: CLEAN**", "`REVIEW: CLEAN`", "**REVIEW:** CLEAN", "review: clean", "  Review:  Clean.  ",
    "> REVIEW: CLEAN", "## REVIEW: CLEAN", "REVIEW:CLEAN", "__REVIEW: CLEAN__",
])
def test_markdown_and_case_are_tolerated(line: str) -> None:
    assert parse_verdict(f"fine\n{line}\n\n").verdict == "CLEAN"


def test_both_words_present_the_last_wins() -> None:
    assert parse_verdict("REVIEW: BLOCKING\n- a.py:1: x\nOn second thought.\nREVIEW: CLEAN\n").verdict == "CLEAN"
    verdict = parse_verdict("REVIEW: CLEAN\nwait\n- a.py:1: x\nREVIEW: BLOCKING\n")
    assert verdict.verdict == "BLOCKING"
    assert verdict.findings == (Finding("a.py", 1, "x"),)


def test_the_verdict_line_need_not_be_the_very_last() -> None:
    assert parse_verdict("REVIEW: BLOCKING\n\n[cost: $0.02, 1.2k tokens]\n").verdict == "BLOCKING"


@pytest.mark.parametrize("output", [
    "REVIEW: CLEAN or REVIEW: BLOCKING",  # the prompt's instruction echoed back
    "The code is clean.",
    "REVIEW: LGTM",
    "REVIEW: CLEAN-ish",
    "I would say REVIEW: CLEAN",
    "\x00\x1b[31mgarbage\x1b[0m\n{}\n" * 3,
])
def test_anything_else_is_missing_never_clean(output: str) -> None:
    verdict = parse_verdict(output)
    assert verdict.verdict == "MISSING"
    assert verdict.reason == "no REVIEW: line"
    assert verdict.findings == ()
    assert verdict.tail


def test_missing_keeps_the_last_lines_of_the_output() -> None:
    output = "\n".join(f"line {i}" for i in range(100)) + "\n- a.py:1: half a finding\n"
    verdict = parse_verdict(output)
    assert verdict.verdict == "MISSING"
    tail = verdict.tail.splitlines()
    assert len(tail) == TAIL_LINES
    assert tail[-1] == "- a.py:1: half a finding"
    assert tail[0] == f"line {100 - TAIL_LINES + 1}"


@pytest.mark.parametrize("output", ["", "\n\n  \n"])
def test_empty_output_is_missing(output: str) -> None:
    verdict = parse_verdict(output)
    assert verdict.verdict == "MISSING"
    assert verdict.reason.startswith("no REVIEW: line")
    assert "printed nothing" in verdict.reason
    assert verdict.tail == ""
