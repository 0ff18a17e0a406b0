"""The lead's own findings for a relaunch: `recover --relaunch --note TEXT | --note-file F` and the
recover dialog's note field.

The agent of the next attempt reads the note in its prompt's findings block, after what lanes-tui
found itself, quoted like every finding (`> `): no agent takes a line of it for a command to run,
and the sim reads it as prose, never as a step. It is bounded: a note over MAX_NOTE_BYTES is a log
pasted whole, which the gate tails already carry, and every later prompt of the lane would carry it.
"""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.text_file import read_text_file

__all__ = ["EVENT_NOTE_CHARS", "MAX_NOTE_BYTES", "check_note", "read_note_file"]

#: The most a note may hold, in UTF-8 bytes: as much as `.lanes/rules.md`, so `lanes-tui ci`'s findings
#: file (80 log lines of each failed check) fits.
MAX_NOTE_BYTES = 64 * 1024
#: How much of the note the `relaunched` event keeps (event lines are read from their file's tail in
#: windows; the new lane's record keeps the whole note).
EVENT_NOTE_CHARS = 2000
NOTE_FILE_FIX = "give the path of a UTF-8 text file with your notes"


def check_note(text: str, *, source: str = "--note") -> str:
    """The note without surrounding blank space; a LanesError naming `source` when it is empty, too
    large or holds NUL bytes (no agent CLI passes one through)."""
    note = text.strip()
    if not note:
        raise LanesError(f"the note ({source}) is empty", "write what the next attempt should know, or leave it out")
    size = len(note.encode("utf-8", "surrogateescape"))
    if size > MAX_NOTE_BYTES:
        raise LanesError(f"the note ({source}) has {size:,} bytes, more than {MAX_NOTE_BYTES:,}",
                         "keep it to what the next attempt must know: the gates' output is in the findings already")
    if "\x00" in note:
        raise LanesError(f"the note ({source}) contains NUL bytes", "give plain text")
    return note


def read_note_file(path: Path) -> str:
    """`--note-file F`: the file read as UTF-8 (at most MAX_NOTE_BYTES + 1 bytes are read), then checked."""
    text = read_text_file(path, MAX_NOTE_BYTES, "the note file", unreadable=NOTE_FILE_FIX,
                          too_large="keep it to what the next attempt must know: the gates' output is in the "
                                    "findings already")
    if text is None:
        raise LanesError(f"the note file {path} does not exist", NOTE_FILE_FIX)
    return check_note(text, source=f"--note-file {path}")
