"""Lane ids, task slugs and lane branch names: the only shapes accepted anywhere.

An id ends up in a path (`.lanes/state/lanes/<id>`), a branch (`lane/<id>`) and an environment
variable, so anything but letters, digits, `-` and `_` is refused before it can escape a directory.
Nothing may start with `-` either: an id is also an argument (`git branch -D lane/<id>` is safe, but
`--lane <id>` to the supervisor and every `lanes-tui … <id>` would read `-x` as an option).
"""

from __future__ import annotations

import re

from lanes_tui.engine.core.errors import LanesError

LANE_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}\Z")
SLUG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*\Z")
LANE_ID_PARTS_RE = re.compile(r"^(?P<slug>[A-Za-z0-9_][A-Za-z0-9_-]*)-a(?P<attempt>[0-9]+)\Z")
#: The id rules as the lead reads them in every refusal.
ID_RULE = "letters, digits, '-' or '_', not starting with '-' (no '/', '.', spaces)"
BRANCH_PREFIX = "lane/"
MAX_SLUG = 58  # leaves room for "-a" and a three-digit attempt inside 64 characters


def validate_lane_id(lane_id: str) -> str:
    """Return `lane_id` unchanged, or raise naming what is wrong with it."""
    if not isinstance(lane_id, str) or not LANE_ID_RE.match(lane_id) or lane_id in {".", ".."}:
        raise LanesError(
            f"invalid lane id {lane_id!r}",
            f"use 1-64 {ID_RULE}",
        )
    return lane_id


def validate_slug(slug: str) -> str:
    """A task slug as given with `--id`: the same alphabet as a lane id, a little shorter."""
    if not isinstance(slug, str) or not SLUG_RE.match(slug) or len(slug) > MAX_SLUG:
        raise LanesError(
            f"invalid task id {slug!r}",
            f"use 1-{MAX_SLUG} {ID_RULE}",
        )
    return slug


def slugify(text: str, *, limit: int = 32) -> str:
    """A readable slug from prompt text: `Fix the login bug!` → `fix-the-login-bug`."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    slug = slug[:limit].rstrip("-")
    return slug or "task"


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
