"""A ticket's scope: exact files and folders ending in `/`, relative to its repository, and who owns what.

A scope is written by hand and then compared as text: with the scheduler's owned files, with the files a
lane changed (at accept). So every entry is refused unless it is already in the one plain form it is
compared in (no `./`, no `//`, no `..`, no globs), and two tickets may never own the same file.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from lanes_tui.engine.decisions.scope import covers, overlap

__all__ = ["GLOB_CHARS", "PROTECTED", "Owners", "covers", "overlap", "scope_problem"]

#: Characters a glob would read more into; a scope lists exact paths only.
GLOB_CHARS = "*?[]"
#: Top-level folders no ticket may own: git's own data and lanes-tui's state.
PROTECTED = (".git", ".lanes")


def scope_problem(entry: str) -> tuple[str, str] | None:
    """(what is wrong, the fix) for one scope entry, or None when it is a plain relative path."""
    if not entry.strip():
        return "contains an empty path", "remove the empty entry"
    if entry.startswith(("/", "~")):
        return (f"scope path {entry!r} is absolute",
                "write it relative to the repository, e.g. 'src/app.py' or 'src/api/'")
    if "\\" in entry or "\x00" in entry:
        return f"scope path {entry!r} contains a backslash or NUL", "write the path with '/' between folders"
    if glob := next((c for c in entry if c in GLOB_CHARS), None):
        return (f"scope path {entry!r} contains the glob character {glob!r}",
                "list exact files, or a folder ending in '/' (a file whose name holds [ ] is owned "
                "through its folder)")
    folder = entry.endswith("/")
    normal = posixpath.normpath(entry)
    if normal == ".." or normal.startswith("../"):
        return (f"scope path {entry!r} escapes the repository",
                "list only paths inside the repository (a ticket for another repository sets repo = \"../other\")")
    if normal == ".":
        return f"scope path {entry!r} names the whole repository", "list the files and folders the ticket changes"
    written = normal + "/" if folder else normal
    if written != entry:
        return f"scope path {entry!r} is not in plain form", f"write it as {written!r}"
    if normal.split("/", 1)[0] in PROTECTED:
        return (f"scope path {entry!r} is protected",
                "no ticket may own .git/ (git's data) or .lanes/ (lanes-tui's state): remove it from the scope")
    return None


class Owners:
    """What the tickets read so far own, per repository, indexed so that one scope entry is checked
    in time proportional to its own length: by its path (`src/a.py` and `src/a.py/` are one), by
    each folder above it, and (for a folder entry) by anything owned inside it."""

    def __init__(self) -> None:
        self.paths: dict[tuple[Path, str], int] = {}
        self.folders: dict[tuple[Path, str], int] = {}
        self.inside: dict[tuple[Path, str], int] = {}  # folder -> the first ticket owning something in it

    def first_clash(self, home: Path, scope: tuple[str, ...]) -> int | None:
        found = [index for entry in scope for index in self._clashes(home, entry)]
        return min(found, default=None)

    def _clashes(self, home: Path, entry: str) -> list[int]:
        key = entry.rstrip("/")
        hits = [self.paths.get((home, key)), *(self.folders.get((home, up)) for up in _folders_above(key))]
        if entry.endswith("/"):
            hits.append(self.inside.get((home, key)))
        return [hit for hit in hits if hit is not None]

    def add(self, home: Path, index: int, scope: tuple[str, ...]) -> None:
        for entry in scope:
            key = entry.rstrip("/")
            self.paths.setdefault((home, key), index)
            if entry.endswith("/"):
                self.folders.setdefault((home, key), index)
            for up in _folders_above(key):
                self.inside.setdefault((home, up), index)


def _folders_above(path: str) -> list[str]:
    """`a/b/c` -> [`a`, `a/b`]."""
    return [path[:at] for at, char in enumerate(path) if char == "/"]
