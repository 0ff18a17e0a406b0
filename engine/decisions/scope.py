"""A lane's scope: which of its changed files it was allowed to touch.

A scope (`LaneRecord.scope`, from a plan ticket) holds exact paths relative to the repository and
folders ending in `/`; no globs. An empty scope means the lane has none and nothing is checked.
The changed files come from `git.worktrees.changed_files`, which asks git with `--no-renames`: a
renamed file is listed by its old path and its new path, so both must be inside the scope (moving
a file out of the scope, or into it from elsewhere, is touching a file outside it).

`check` writes the scope and the files outside it into the packet; `accept` refuses a lane with
files outside its scope unless the lead gives `--override REASON` (`accept_plan`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["describe_outside", "in_scope", "outside_scope"]

#: How many outside files a one-line refusal names before it says "and N more".
SHOWN = 8


def _normal(path: str) -> str:
    """`./a/b` and `a//b` as git names them (`a/b`); a folder keeps its trailing `/`."""
    folder = path.endswith("/")
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    text = "/".join(parts)
    return text + "/" if folder and text else text


def in_scope(path: str, scope: Sequence[str]) -> bool:
    """Whether `path` is one of the scope's exact paths or lies under one of its folders."""
    name = _normal(path)
    return any(covers(item, name) for item in map(_normal, scope) if item)


def covers(entry: str, path: str) -> bool:
    """Whether scope entry `entry` owns the repository path `path` (a file, or a folder ending in `/`)."""
    if entry.endswith("/"):
        return path.startswith(entry) or path.rstrip("/") == entry.rstrip("/")
    return path.rstrip("/") == entry


def overlap(first: Iterable[str], second: Iterable[str]) -> tuple[str, str] | None:
    """The first pair (entry of `first`, entry of `second`) that owns a file in common, or None.

    Two entries overlap when they are the same path, or one is a folder holding the other.
    """
    theirs = list(second)
    for mine in first:
        for other in theirs:
            if covers(mine, other) or covers(other, mine):
                return mine, other
    return None


def outside_scope(files: Iterable[str], scope: Sequence[str]) -> list[str]:
    """The changed files outside `scope`, sorted; always empty for an empty scope (no scope set)."""
    if not any(_normal(entry) for entry in scope):
        return []
    return sorted({f for f in files if not in_scope(f, scope)})


def describe_outside(lane_id: str, outside: Sequence[str], scope: Sequence[str]) -> str:
    """The one-line refusal: what the lane touched outside its scope, and the two ways forward."""
    shown = ", ".join(outside[:SHOWN]) + (f" and {len(outside) - SHOWN} more" if len(outside) > SHOWN else "")
    return (f"it changed {len(outside)} file{'s' if len(outside) != 1 else ''} outside its scope "
            f"({', '.join(scope)}): {shown}; revert them in the lane and run `lanes-tui check {lane_id}`, "
            f"or accept with --override REASON")
