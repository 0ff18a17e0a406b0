"""Lane ids, task slugs and lane branch names: the only shapes accepted anywhere.

An id ends up in a path (`.lanes/state/lanes/<id>`), a branch (`lane/<id>`) and an environment
variable, so anything but letters, digits, `-` and `_` is refused before it can escape a directory.
Nothing may start with `-` either: an id is also an argument (`git branch -D lane/<id>` is safe, but
`--lane <id>` to the supervisor and every `lanes-tui … <id>` would read `-x` as an option).

"Letters" are those of any script (`str.isalnum()`, NFKC-normalised, plus the combining marks Indic,
Thai, Hebrew and Arabic words are written with): a task titled in Greek or Hindi gets a readable
slug instead of an empty one. None of them is a character git's `check-ref-format` refuses (those
are ASCII: controls, space, `~^:?*[` and backslash, `..`, `@{`), and a byte cap keeps every id a short path
component (64 characters of a four-byte script would not be). ASCII ids are exactly as before.
"""

from __future__ import annotations

import re
import unicodedata

from lanes_tui.engine.core.digest import sha256_hex
from lanes_tui.engine.core.errors import LanesError

#: Combining marks kept inside a word (`\\w` is `str.isalnum()` and `_`, which leaves marks out).
_MARKS = ("\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
          "\u0900-\u0dff\u0e00-\u0eff\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\u3099\u309a\ufe20-\ufe2f")
_WORD = rf"[^\W\d_]|[0-9_{_MARKS}]|\d"  # any script's letters and digits, `_`, and the marks
LANE_ID_RE = re.compile(rf"^\w(?:{_WORD}|-){{0,63}}\Z")
SLUG_RE = re.compile(rf"^\w(?:{_WORD}|-)*\Z")
LANE_ID_PARTS_RE = re.compile(rf"^(?P<slug>\w(?:{_WORD}|-)*)-a(?P<attempt>[0-9]+)\Z")
_NOT_WORD_RE = re.compile(rf"(?:(?!{_WORD}).)+", re.DOTALL)
#: A path component holds 255 bytes; ids stay well inside that in any script.
MAX_ID_BYTES = 128
#: The id rules as the lead reads them in every refusal.
ID_RULE = "letters (any script), digits, '-' or '_', not starting with '-' (no '/', '.', spaces)"
BRANCH_PREFIX = "lane/"
MAX_SLUG = 58  # leaves room for "-a" and a three-digit attempt inside 64 characters


def validate_lane_id(lane_id: str) -> str:
    """Return `lane_id` unchanged, or raise naming what is wrong with it."""
    if not isinstance(lane_id, str) or not LANE_ID_RE.match(lane_id) or not _short_and_normal(lane_id):
        raise LanesError(
            f"invalid lane id {lane_id!r}",
            f"use 1-64 {ID_RULE}",
        )
    return lane_id


def validate_slug(slug: str) -> str:
    """A task slug as given with `--id`: the same alphabet as a lane id, a little shorter."""
    if not isinstance(slug, str) or not SLUG_RE.match(slug) or len(slug) > MAX_SLUG \
            or not _short_and_normal(slug):
        raise LanesError(
            f"invalid task id {slug!r}",
            f"use 1-{MAX_SLUG} {ID_RULE}",
        )
    return slug


def slugify(text: str, *, limit: int = 32) -> str:
    """A readable slug from prompt text: `Fix the login bug!` → `fix-the-login-bug`, `Ελέγξτε τη
    σύνδεση` → `ελέγξτε-τη-σύνδεση`; `task-<8 hex>` of the text when no letter or digit is left."""
    slug = _NOT_WORD_RE.sub("-", unicodedata.normalize("NFKC", text).lower().replace("_", "-")).strip("-")
    slug = _cut_at_word(slug, limit)
    while len(slug.encode()) > MAX_ID_BYTES - 8:  # room for "-a" and the attempt
        slug = _cut_at_word(slug, len(slug) - 1)
    if not SLUG_RE.match(slug) or not _short_and_normal(slug):  # a leading mark, a lowercasing quirk
        slug = ""
    return slug or "task-" + sha256_hex(text.encode("utf-8", "surrogatepass"))[:8]


def _cut_at_word(slug: str, limit: int) -> str:
    """`slug` in at most `limit` characters, cut after a whole word when one ends in the second half.

    A cut mid-word (`add-a-subtract-function-to-the-calc`) reads as a different word; a first word
    longer than half the limit is cut where the limit falls, as before.
    """
    if len(slug) <= limit:
        return slug
    end = slug.rfind("-", 0, limit + 1)  # a `-` right at the limit: the word before it is whole
    return (slug[:end] if end >= limit // 2 else slug[:limit]).rstrip("-")


def _short_and_normal(name: str) -> bool:
    """Within the byte cap, and NFKC-normal (two ids that look alike are equal), never `.` or `..`."""
    if name.isascii():
        return True
    return len(name.encode("utf-8", "surrogatepass")) <= MAX_ID_BYTES and unicodedata.is_normalized("NFKC", name)


def lane_id_for(slug: str, attempt: int) -> str:
    return validate_lane_id(f"{validate_slug(slug)}-a{attempt}")


def split_lane_id(lane_id: str) -> tuple[str, int]:
    """(slug, attempt) of a lane id; an id without `-aN` is attempt 1 of itself."""
    match = LANE_ID_PARTS_RE.match(validate_lane_id(lane_id))
    if match is None:
        return lane_id, 1
    return match.group("slug"), int(match.group("attempt"))


def branch_for(lane_id: str) -> str:
    return BRANCH_PREFIX + validate_lane_id(lane_id)


def validate_lane_branch(branch: str) -> str:
    """Refuse any branch that is not `lane/<valid id>`: removal code only ever deletes these."""
    if not branch.startswith(BRANCH_PREFIX):
        raise LanesError(f"branch {branch!r} is not a lane branch", "only 'lane/<id>' branches are touched")
    validate_lane_id(branch[len(BRANCH_PREFIX):])
    return branch
