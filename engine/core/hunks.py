"""A unified diff's hunks, found in its text: what a hunk comment points at.

The dashboard's Diff pane moves between them and the command line's `comment ID FILE:LINE` finds the
one holding a line of the new file. Only the text is read (no git): a diff cut short, a binary file
or a diff with no hunks gives what it holds, never an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Hunk", "diff_hunks", "hunk_at"]

_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    """One hunk: its `file` (the new path; the old one for a deleted file), its `@@` `header` line,
    where it is in the diff's lines (`start` is the header's index, `end` one past its last line) and
    the new file's lines it covers (`new_start`, `new_count`)."""

    file: str
    header: str
    start: int
    end: int
    new_start: int
    new_count: int
    lines: tuple[str, ...]

    def covers(self, line: int) -> bool:
        """Whether line `line` of the new file is in this hunk (a pure deletion covers its place)."""
        return self.new_start <= line < self.new_start + max(self.new_count, 1)


def diff_hunks(text: str) -> list[Hunk]:
    """Every hunk of a unified diff (as `git diff` prints it), in order."""
    lines = text.split("\n")
    hunks: list[Hunk] = []
    old_path = new_path = ""
    open_at: int | None = None
    numbers = (0, 0)

    def close(end: int) -> None:
        nonlocal open_at
        if open_at is not None:
            body = lines[open_at + 1:end]
            while body and body[-1] == "":
                body.pop()
            file = new_path if new_path and new_path != "/dev/null" else old_path
            hunks.append(Hunk(file, lines[open_at], open_at, open_at + 1 + len(body), numbers[0], numbers[1],
                              tuple(body)))
            open_at = None

    for i, line in enumerate(lines):
        if line.startswith("diff --git ") or line.startswith("diff --cc "):
            close(i)
            old_path = new_path = ""
            parts = line.split(" b/", 1)
            new_path = parts[1] if len(parts) == 2 else ""
        elif open_at is None and line.startswith("--- "):
            old_path = _path(line[4:])
        elif open_at is None and line.startswith("+++ "):
            new_path = _path(line[4:])
        elif (found := _HEADER.match(line)) is not None:
            close(i)
            open_at = i
            numbers = (int(found.group(3)), int(found.group(4)) if found.group(4) is not None else 1)
        elif open_at is not None and not line.startswith((" ", "+", "-", "\\")) and line != "":
            close(i)  # the hunk ended: a line no hunk holds (a note, a cut)
    close(len(lines))
    return hunks


def _path(name: str) -> str:
    name = name.split("\t", 1)[0]
    if name.startswith(("a/", "b/")):
        return name[2:]
    return name


def hunk_at(hunks: list[Hunk], file: str, line: int) -> Hunk | None:
    """The hunk of `file` that holds line `line` of the new file; None when no hunk does."""
    return next((h for h in hunks if h.file == file and h.covers(line)), None)
