"""Lane slugs in any script (issue 17 item 5): readable, valid as `lane/<slug>-aN` branches, ASCII
exactly as before, and a short hash only when no letter or digit is left."""

from __future__ import annotations

import re
import subprocess

import pytest

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import (
    MAX_ID_BYTES,
    branch_for,
    lane_id_for,
    slugify,
    split_lane_id,
    validate_lane_id,
    validate_slug,
)


def _old_slugify(text: str, limit: int = 32) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "task"


@pytest.mark.parametrize("text", ["Fix the login bug!", "  add_tests for calc.py ", "x" * 80, "a--b__c", "Camel 42"])
def test_ascii_titles_slug_exactly_as_before(text: str) -> None:
    assert slugify(text) == _old_slugify(text)


@pytest.mark.parametrize(("text", "slug"), [
    ("Ελέγξτε τη σύνδεση", "ελέγξτε-τη-σύνδεση"),
    ("修复登录错误", "修复登录错误"),
    ("हिन्दी में लिखें", "हिन्दी-में-लिखें"),  # the vowel signs (combining marks) stay in their words
    ("Исправить вход!", "исправить-вход"),
    ("Ｆｕｌｌ width ²", "full-width-2"),  # NFKC first
    ("café au lait", "café-au-lait"),
])
def test_titles_in_any_script_keep_their_letters(text: str, slug: str) -> None:
    assert slugify(text) == slug
    lane = lane_id_for(slug, 3)
    assert split_lane_id(lane) == (slug, 3) and validate_slug(slug) == slug
    check = subprocess.run(["git", "check-ref-format", branch_for(lane)], capture_output=True, check=False)
    assert check.returncode == 0, check.stderr


def test_a_short_hash_only_when_nothing_is_left() -> None:
    assert re.fullmatch(r"task-[0-9a-f]{8}", slugify("!!! ??? …"))
    assert slugify("!!!") != slugify("???") and slugify("!!!") == slugify("!!!")
    long = slugify("𠀀" * 40)  # four bytes a character: cut by bytes too, so the id stays a short name
    assert len(lane_id_for(long, 999).encode()) <= MAX_ID_BYTES


@pytest.mark.parametrize("bad", ["a b", "a/b", "a.b", "-a", "..", "a~b", "a:b", "é" * 65, "ｆｕｌｌ", "\u0301a"])
def test_ids_still_refuse_what_git_or_a_path_would_not_take(bad: str) -> None:
    with pytest.raises(LanesError):
        validate_lane_id(bad)


@pytest.mark.parametrize(("text", "slug"), [
    ("Add a subtract function to the calculator module", "add-a-subtract-function-to-the"),
    ("Refactor the authentication middleware for sessions", "refactor-the-authentication"),
    ("Supercalifragilisticexpialidocious-and-then-some more", "supercalifragilisticexpialidocio"),  # one long word
    ("Fix the flaky login test in CI.", "fix-the-flaky-login-test-in-ci"),  # 30: not cut at all
])
def test_a_long_title_is_cut_after_a_whole_word(text: str, slug: str) -> None:
    """Issue 32: `add-a-subtract-function-to-the-calc` read as a different word; the cut now falls
    between words, unless the first word alone runs past half the limit."""
    assert slugify(text) == slug
    assert len(slug) <= 32 and validate_slug(slug) == slug


def test_a_long_title_in_a_wide_script_is_cut_by_bytes_after_a_whole_word() -> None:
    slug = slugify(" ".join(["𠀀" * 10] * 6))  # four bytes a character: the byte cap cuts, at a word
    assert slug == "-".join(["𠀀" * 10] * 2) and len(lane_id_for(slug, 999).encode()) <= MAX_ID_BYTES
